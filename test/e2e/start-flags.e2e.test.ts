import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { localBase, splitOwnFlags } from "../../scripts/dev-args.mjs";
import { devVar, devVarsProblems, ensureDevVars, parseDevVars } from "../../scripts/dev-vars.mjs";

// `npm start`'s own flags and its reading of .dev.vars (scripts/dev-args.mjs, scripts/dev-vars.mjs),
// against README.md "Quick start".

describe("npm start's own requests follow the wrangler dev flags they are given", () => {
  // README: "any other `wrangler dev` flag can be passed the same way". With `--local-protocol
  // https` wrangler serves https only: the script's own requests (the health check, the minute
  // cron, `--dev-key`) must use it too.
  it("uses https for its own requests when wrangler dev serves --local-protocol https", () => {
    expect(localBase(["--local-protocol", "https"])).toMatch(/^https:\/\//);
    expect(localBase(["--local-protocol=https", "--port", "18787"])).toBe("https://127.0.0.1:18787");
  });
});

describe("--dev-tenant <id>", () => {
  // A missing id is refused, and so is the next flag taken for one: `--dev-tenant --port 18788`
  // must not name a tenant "--port" and hand "18788" to wrangler as its script.
  it("does not take the next flag as the tenant id", () => {
    expect(() => splitOwnFlags(["--dev-tenant", "--port", "18788"])).toThrow(/--dev-tenant needs a tenant id/);
  });
});

describe("a SECRETS_KEY in .dev.vars the service cannot use", () => {
  const adminLine = "ADMIN_TOKEN=adm_cPM6Zx8LMop2DBC2DXtdHgIvCnmezx3M\n";

  // docs/providers.md: "`npm start` writes a random one into `.dev.vars` when it is missing.
  // Without it (or with a shorter one), `PUT /v1/providers/{provider}` answers 503 NotConfigured".
  // An unusable key is reported at start, as a short ADMIN_TOKEN is.
  it("an empty SECRETS_KEY line is reported at start (as a short ADMIN_TOKEN is)", () => {
    const text = `${adminLine}SECRETS_KEY=\nSCRIPTED_MODELS=on\nLOCAL_DEV=on\n`;
    expect(devVar(text, "SECRETS_KEY")).toBe("");
    expect(devVarsProblems(text).join("\n")).toMatch(/SECRETS_KEY/);
  });

  it("a SECRETS_KEY shorter than 32 characters is reported at start", () => {
    const text = `${adminLine}SECRETS_KEY=short-key\nSCRIPTED_MODELS=on\nLOCAL_DEV=on\n`;
    expect(parseDevVars(text).SECRETS_KEY).toBe("short-key");
    expect(devVarsProblems(text).join("\n")).toMatch(/SECRETS_KEY/);
  });

  it("an empty SECRETS_KEY line is taken as missing: npm start writes a key after it, which wins", () => {
    const dir = mkdtempSync(join(tmpdir(), "das-devvars-"));
    try {
      const path = join(dir, ".dev.vars");
      writeFileSync(path, `${adminLine}SECRETS_KEY=\n`);
      expect(ensureDevVars(path).some((line) => line.startsWith("SECRETS_KEY="))).toBe(true);
      const text = readFileSync(path, "utf8");
      expect(devVar(text, "SECRETS_KEY")?.length).toBeGreaterThanOrEqual(32);
      expect(devVarsProblems(text)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
