import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readAdminToken } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { fencedBlocks } from "./doc-blocks.ts";

// docs/openapi.md "A typed client from the document" as a user follows it: the served
// /openapi.json linted with Redocly's recommended rules, types generated from it with
// openapi-typescript's programmatic API (generate.ts), the README flow written with openapi-fetch
// (flow.ts) type-checked with the docs' own `tsc --strict` line, then run against `npm start`.

const run = promisify(execFile);
const repo = fileURLToPath(new URL("../../", import.meta.url));
const DOC = "docs/openapi.md";

describe("a client generated from /openapi.json", () => {
  let server: DevServer;
  let dir: string;
  beforeAll(async () => {
    server = await startDevServer();
    // The generated files resolve openapi-typescript, openapi-fetch and @types/node from the
    // project's own node_modules, as an app resolves its installed packages.
    dir = mkdtempSync(join(tmpdir(), "das-openapi-client-"));
    symlinkSync(join(repo, "node_modules"), join(dir, "node_modules"), "dir");
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "openapi-client", private: true, type: "module" }));
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("has no error under Redocly's recommended rules", async () => {
    const source = await (await fetch(`${server.baseUrl}/openapi.json`)).text();
    const problems = await lintFromString({ source, absoluteRef: `${server.baseUrl}/openapi.json`, config: await createConfig({ extends: ["recommended"] }) });
    const described = problems.map((problem) => `${problem.severity} ${problem.ruleId} ${problem.location[0]?.pointer ?? ""}: ${problem.message}`);
    expect(described.filter((line) => line.startsWith("error"))).toEqual([]);
    // The warnings that remain: no `license` (the service has none to name), and the WebSocket
    // routes, whose success is a 101 upgrade rather than a 2xx.
    expect(described.map((line) => line.split(":")[0]).sort()).toEqual([
      "warn info-license #/info",
      "warn operation-2xx-response #/paths/~1v1~1sessions~1{sid}~1lanes~1{lane}~1watch/get/responses",
      "warn operation-2xx-response #/paths/~1v1~1sessions~1{sid}~1watch/get/responses",
    ]);
  });

  it("types the README flow under --strict with no casts, and runs it", async () => {
    const [generate, flow] = fencedBlocks(DOC, "ts");
    const [commands] = fencedBlocks(DOC, "sh");
    expect(generate).toContain('from "openapi-typescript"');
    expect(flow).toContain("createClient<paths>");
    // A user's code: no `as` casts, no non-null `!` assertions, no `any`.
    expect(flow).not.toMatch(/\bas\b|\bany\b|[\w)\]]!(?!=)/);
    writeFileSync(join(dir, "generate.ts"), generate ?? "");
    writeFileSync(join(dir, "flow.ts"), flow ?? "");
    const env = { ...process.env, BASE: server.baseUrl, ADMIN: readAdminToken() };

    await run(process.execPath, ["generate.ts"], { cwd: dir, env, timeout: 60_000 });
    const types = readFileSync(join(dir, "api.d.ts"), "utf8");
    expect(types).toContain('"/v1/sessions/{sid}/lanes/{lane}/prompt"');

    // The docs' install line pins what this test runs with (the project's own devDependencies): an
    // unpinned `typescript` installs whatever is latest, and openapi-typescript 7 fails on TypeScript 7.
    const install = commands?.split("\n").find((line) => line.startsWith("npm install "));
    const pinned = Object.fromEntries(
      (install ?? "")
        .split(" ")
        .slice(3)
        .map((spec) => {
          const at = spec.lastIndexOf("@");
          return at > 0 ? [spec.slice(0, at), spec.slice(at + 1)] : [spec, "(unpinned)"];
        }),
    );
    const devDependencies: Record<string, string> = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")).devDependencies;
    expect(pinned).toEqual({
      "openapi-typescript": devDependencies["openapi-typescript"],
      "openapi-fetch": devDependencies["openapi-fetch"],
      typescript: devDependencies.typescript,
      "@types/node": devDependencies["@types/node"]?.split(".")[0],
    });

    // The docs' own tsc line, with the project's TypeScript; the generated types are checked too.
    const tsc = commands?.split("\n").find((line) => line.startsWith("npx tsc "));
    expect(tsc).toBe("npx tsc --strict --noEmit --module nodenext --target es2023 --types node flow.ts");
    const args = (tsc ?? "").split(" ").slice(2);
    const checked = await run(join(repo, "node_modules/.bin/tsc"), args, { cwd: dir, timeout: 180_000 }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) }));
    expect(checked.stdout).toBe("");

    const { stdout } = await run(process.execPath, ["flow.ts"], { cwd: dir, env, timeout: 90_000 });
    expect(stdout.trim().split("\n")).toEqual(["assistant: hello there", "queued: steer", "entries: user, assistant"]);
    expect(fencedBlocks(DOC, "text")[0]?.trim()).toBe(stdout.trim());
  }, 300_000);
});
