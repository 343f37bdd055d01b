import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, createTenant, readAdminToken } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { fencedBlocks } from "./doc-blocks.ts";

// client/README.md as a user follows it: pack the SDK, install the tarball into a fresh app (from
// npm's cache: the SDK's one dependency, valibot, is the project's own), type-check the README's
// example against the package's declarations, and run it with Node against `npm start`.

const run = promisify(execFile);
const repo = fileURLToPath(new URL("../../", import.meta.url));

describe("the client package", () => {
  let server: DevServer;
  let dir: string;
  beforeAll(async () => {
    server = await startDevServer();
    dir = mkdtempSync(join(tmpdir(), "das-sdk-"));
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("installs from its packed tarball and runs the README example as written", async () => {
    await run("npm", ["pack", "--pack-destination", dir], { cwd: join(repo, "client") });
    const tarball = readdirSync(dir).find((name) => name.endsWith(".tgz"));
    expect(tarball).toBe("durable-agent-sessions-client-0.1.0.tgz");

    const app = join(dir, "app");
    mkdirSync(app);
    const manifest = { name: "sdk-example", private: true, type: "module", dependencies: { "@durable-agent-sessions/client": `file:${join(dir, tarball ?? "")}` } };
    writeFileSync(join(app, "package.json"), JSON.stringify(manifest, null, 2));
    await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund"], { cwd: app });

    const [example] = fencedBlocks("client/README.md", "ts");
    expect(example).toContain('from "@durable-agent-sessions/client"');
    writeFileSync(join(app, "example.ts"), example ?? "");
    const compilerOptions = {
      module: "nodenext",
      target: "es2023",
      lib: ["es2023", "dom"],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      typeRoots: [join(repo, "node_modules/@types")],
      types: ["node"],
    };
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["example.ts"] }));
    await run(join(repo, "node_modules/.bin/tsc"), ["-p", app]);

    const { key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "sdk");
    const { stdout } = await run(process.execPath, ["example.ts"], { cwd: app, env: { ...process.env, BASE: server.baseUrl, KEY: key }, timeout: 90_000 });
    expect(stdout.trim().split("\n")).toEqual(["assistant: Hello!", "transcript entries: 2", "not found: 404"]);
  }, 240_000);

  it("runs the README example from the repository's sources (./client/index.ts) with Node's own type stripping", async () => {
    const [example] = fencedBlocks("client/README.md", "ts");
    const fromSources = (example ?? "").replace('from "@durable-agent-sessions/client"', `from ${JSON.stringify(join(repo, "client/index.ts"))}`);
    expect(fromSources).toContain("client/index.ts");
    // Another session id than the packed run's: each run creates its own.
    writeFileSync(join(dir, "from-sources.mts"), fromSources.replaceAll("sdk-demo", "sdk-sources-demo"));
    const { key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "sdksrc");
    const { stdout } = await run(process.execPath, ["from-sources.mts"], { cwd: dir, env: { ...process.env, BASE: server.baseUrl, KEY: key }, timeout: 90_000 });
    expect(stdout.trim().split("\n")).toEqual(["assistant: Hello!", "transcript entries: 2", "not found: 404"]);
  }, 120_000);

  it("runs the README's browser-token example as written (from the repository's sources): the page watches and prompts with the token only", async () => {
    const example = fencedBlocks("client/README.md", "ts").find((block) => block.includes("createBrowserToken"));
    const fromSources = (example ?? "").replace('from "@durable-agent-sessions/client"', `from ${JSON.stringify(join(repo, "client/index.ts"))}`);
    expect(fromSources).toContain("client/index.ts");
    writeFileSync(join(dir, "browser-token.mts"), fromSources);
    const { key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "sdktoken");
    const { stdout } = await run(process.execPath, ["browser-token.mts"], { cwd: dir, env: { ...process.env, BASE: server.baseUrl, KEY: key }, timeout: 90_000 });
    expect(stdout.trim().split("\n")).toEqual(["watching, entries: 0", "settled"]);
  }, 120_000);
});
