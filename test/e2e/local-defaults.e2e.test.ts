import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { unstable_readConfig } from "wrangler";
import { afterEach, describe, expect, it } from "vitest";
import { devVar, devVarsProblems, ensureDevVars } from "../../scripts/dev-vars.mjs";
import { adminTokenProblem, MIN_ADMIN_TOKEN_CHARS } from "../../worker/admin-token.ts";

// Honest defaults: what wrangler.toml ships to a deployment is safe (no scripted test models, no
// cross-origin browser access); local development turns the scripted models on through the
// .dev.vars that `npm start` writes, which deployments never read.

describe("the deployment defaults in wrangler.toml", () => {
  it("ship the scripted models off, no CORS origin and local development off (https-only provider and tool URLs)", () => {
    const config = unstable_readConfig({ config: "wrangler.toml" }, { hideWarnings: true });
    expect(config.vars).toEqual({ SCRIPTED_MODELS: "off", CORS_ORIGINS: "", LOCAL_DEV: "off" });
  });
});

describe("the .dev.vars npm start writes", () => {
  let dir: string | undefined;
  const file = () => {
    dir ??= mkdtempSync(join(tmpdir(), "das-devvars-"));
    return join(dir, ".dev.vars");
  };
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("is created with a random admin token, a random secrets key, the scripted models on and local development marked, readable only by the user", () => {
    const path = file();
    const added = ensureDevVars(path);
    const text = readFileSync(path, "utf8");
    expect(devVar(text, "ADMIN_TOKEN")).toMatch(/^adm_[A-Za-z0-9_-]{32}$/);
    expect(devVar(text, "SECRETS_KEY")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(devVar(text, "SCRIPTED_MODELS")).toBe("on");
    expect(devVar(text, "LOCAL_DEV")).toBe("on");
    expect(added).toHaveLength(4);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it("gains the missing local settings without touching the existing token", () => {
    const path = file();
    writeFileSync(path, "ADMIN_TOKEN=adm_existing\nSECRETS_KEY=existing-secrets-key-of-at-least-32-chars", { mode: 0o600 });
    expect(ensureDevVars(path)).toEqual(["SCRIPTED_MODELS=on", "LOCAL_DEV=on"]);
    expect(readFileSync(path, "utf8")).toBe("ADMIN_TOKEN=adm_existing\nSECRETS_KEY=existing-secrets-key-of-at-least-32-chars\nSCRIPTED_MODELS=on\nLOCAL_DEV=on\n");
  });

  it("a generated admin token is long enough for the service; an older short one is reported, never rewritten", () => {
    const path = file();
    ensureDevVars(path);
    const generated = readFileSync(path, "utf8");
    expect(adminTokenProblem(devVar(generated, "ADMIN_TOKEN"))).toBeUndefined();
    expect(devVarsProblems(generated)).toEqual([]);

    const short = "ADMIN_TOKEN=adm_existing\nSECRETS_KEY=existing-secrets-key-of-at-least-32-chars\nSCRIPTED_MODELS=on\nLOCAL_DEV=on\n";
    writeFileSync(path, short);
    expect(ensureDevVars(path)).toEqual([]);
    expect(readFileSync(path, "utf8")).toBe(short);
    const [problem, ...more] = devVarsProblems(short);
    expect(more).toEqual([]);
    expect(problem).toContain(`The ADMIN_TOKEN in .dev.vars has 12 characters; the service refuses every admin route (503 NotConfigured) with a token shorter than ${MIN_ADMIN_TOKEN_CHARS}.`);
    expect(problem).toContain("Delete the ADMIN_TOKEN line from .dev.vars");
  });

  it("keeps a setting the user chose and adds nothing when complete", () => {
    const path = file();
    writeFileSync(path, "ADMIN_TOKEN=adm_existing\nSECRETS_KEY=existing-secrets-key-of-at-least-32-chars\nSCRIPTED_MODELS=off\nLOCAL_DEV=on\nCORS_ORIGINS=http://localhost:5173\n");
    expect(ensureDevVars(path)).toEqual([]);
    expect(devVar(readFileSync(path, "utf8"), "SCRIPTED_MODELS")).toBe("off");
  });
});
