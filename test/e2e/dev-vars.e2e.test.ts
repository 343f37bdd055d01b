import { mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { unstable_getVarsForDev } from "wrangler";
import { afterAll, describe, expect, it } from "vitest";
import { devVar, devVarsProblems, ensureDevVars, parseDevVars } from "../../scripts/dev-vars.mjs";
import { Api, pollUntil } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// .dev.vars is a dotenv file: wrangler parses it with dotenv (quotes, `NAME = value`, `export`,
// `# comments`, the later of two lines wins), and npm start reads it (the admin token for
// --dev-key, the 32-character check, which settings are missing) exactly as wrangler does. A token
// written in quotes is the token without them; a line with spaces around `=` is found, so no
// second, random ADMIN_TOKEN is appended after it (which, being later, would win).

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TOKEN = `adm_${"q".repeat(40)}`;

function checkoutWithDevVars(devVars: string): string {
  const dir = mkdtempSync(join(tmpdir(), "das-checkout-"));
  for (const entry of readdirSync(ROOT)) {
    if (![".dev.vars", ".wrangler", ".git"].includes(entry)) symlinkSync(join(ROOT, entry), join(dir, entry));
  }
  writeFileSync(join(dir, ".dev.vars"), devVars, { mode: 0o600 });
  return dir;
}

/** What wrangler itself reads from `text` as a .dev.vars file. */
function wranglerReads(text: string): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), "das-dotenv-"));
  try {
    writeFileSync(join(dir, ".dev.vars"), text);
    const vars = unstable_getVarsForDev(join(dir, "wrangler.toml"), undefined, {}, undefined, true);
    return Object.fromEntries(Object.entries(vars).map(([name, binding]) => [name, String(binding.value)]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("npm start's reading of .dev.vars", () => {
  const files = [
    `ADMIN_TOKEN="${TOKEN}"\nSECRETS_KEY='single'\nCORS_ORIGINS=\`back\`\n`,
    `ADMIN_TOKEN = ${TOKEN}\n  export LOCAL_DEV=on\nSCRIPTED_MODELS: on\n`,
    `# a comment\nA=value # trailing comment\nB="quoted # not a comment"\nC=  padded  \nD=\nE\n`,
    `F="two\\nlines"\nG='no\\nescape'\nH="real\nnewline"\nI=unterminated"\nJ=a=b\n`,
    `K=first\r\nK=second\r\nL.dotted-name=1\nconstructor=x\n`,
  ];

  it.each(files.map((text, index) => [index, text]))("is wrangler's, for file %i", (_index, text) => {
    expect({ ...parseDevVars(text) }).toEqual(wranglerReads(text));
  });

  it("finds a quoted or spaced admin token, unquoted, and checks its length unquoted", () => {
    expect(devVar(`ADMIN_TOKEN="${TOKEN}"`, "ADMIN_TOKEN")).toBe(TOKEN);
    expect(devVar(`ADMIN_TOKEN = ${TOKEN}`, "ADMIN_TOKEN")).toBe(TOKEN);
    expect(devVar("ADMIN_TOKEN=a\nADMIN_TOKEN=b", "ADMIN_TOKEN")).toBe("b");
    expect(devVar("#ADMIN_TOKEN=a", "ADMIN_TOKEN")).toBeUndefined();
    // 32 characters in quotes are 32 characters: no warning; 31 are too few, quotes or not.
    expect(devVarsProblems(`ADMIN_TOKEN="${"x".repeat(32)}"`)).toEqual([]);
    expect(devVarsProblems(`ADMIN_TOKEN="${"x".repeat(31)}"`)[0]).toContain("has 31 characters");
  });

  it("adds nothing for settings written with spaces or quotes", () => {
    const dir = mkdtempSync(join(tmpdir(), "das-devvars-"));
    try {
      const path = join(dir, ".dev.vars");
      const text = `ADMIN_TOKEN = ${TOKEN}\nSECRETS_KEY="${"s".repeat(43)}"\nexport SCRIPTED_MODELS=off\nLOCAL_DEV: on\n`;
      writeFileSync(path, text);
      expect(ensureDevVars(path)).toEqual([]);
      expect(readFileSync(path, "utf8")).toBe(text);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("npm start -- --dev-key with a quoted ADMIN_TOKEN in .dev.vars", () => {
  const checkout = checkoutWithDevVars(`ADMIN_TOKEN="${TOKEN}"\nSECRETS_KEY="${"s".repeat(43)}"\nSCRIPTED_MODELS=on\nLOCAL_DEV=on\n`);
  let server: DevServer | undefined;
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
    rmSync(checkout, { recursive: true, force: true });
  });

  it("prints a key of tenant dev, as with an unquoted token", async () => {
    server = await startDevServer({ cwd: checkout, extraArgs: ["--dev-key"] });
    // The service itself took the token without its quotes.
    expect((await new Api(server.baseUrl, TOKEN).request("GET", "/v1/admin/tenants?limit=1")).status).toBe(200);
    const output = await pollUntil("the dev key or its failure", async () => server?.output() ?? "", (text) => /A key of the local tenant|Could not/.test(text), 30_000);
    expect(output).not.toContain("Could not");
    expect(output).toMatch(/export KEY=sk_/);
  }, 120_000);
});

describe("npm start with `ADMIN_TOKEN = …` (spaces around =) in .dev.vars", () => {
  const checkout = checkoutWithDevVars(`ADMIN_TOKEN = ${TOKEN}\nSECRETS_KEY=${"s".repeat(43)}\nSCRIPTED_MODELS=on\nLOCAL_DEV=on\n`);
  let server: DevServer | undefined;
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
    rmSync(checkout, { recursive: true, force: true });
  });

  it("keeps the developer's token: the admin routes accept it and no second ADMIN_TOKEN line is added", async () => {
    server = await startDevServer({ cwd: checkout });
    const status = (await new Api(server.baseUrl, TOKEN).request("GET", "/v1/admin/tenants?limit=1")).status;
    const lines = readFileSync(join(checkout, ".dev.vars"), "utf8").split("\n").filter((line) => line.startsWith("ADMIN_TOKEN"));
    expect({ status, adminTokenLines: lines.length }).toEqual({ status: 200, adminTokenLines: 1 });
  }, 120_000);
});
