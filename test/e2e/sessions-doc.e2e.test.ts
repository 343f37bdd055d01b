import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, createTenant, readAdminToken } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { fencedBlocks, jsonValues } from "./doc-blocks.ts";

// docs/api-sessions.md as a user follows it: its `sh` blocks, exactly as written, run in one bash
// against `npm start`, with `BASE` and `KEY` set as docs/api.md sets them (a fresh tenant).

const run = promisify(execFile);
const repo = fileURLToPath(new URL("../../", import.meta.url));

describe("the docs/api-sessions.md examples", () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer();
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
  });

  it("create a session with metadata, merge a patch into it, find it by metadata", async () => {
    const { key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "sessionsdoc");
    const blocks = fencedBlocks("docs/api-sessions.md", "sh");
    expect(blocks).toHaveLength(1);
    const { stdout } = await run("bash", ["-c", `set -euo pipefail\nexport BASE=${server.baseUrl}\nexport KEY=${key}\n${blocks.join("\n")}`], { cwd: repo, timeout: 60_000 });
    const [created, patched, found] = jsonValues(stdout);
    expect(created).toMatchObject({ id: "chat-u42", name: "Support chat", metadata: { user: "u_42", plan: "pro" } });
    expect(patched).toMatchObject({ id: "chat-u42", metadata: { user: "u_42", plan: "enterprise", ticket: "T-7" } });
    expect(found).toEqual({ items: [{ id: "chat-u42", name: "Support chat", createdAt: expect.any(Number), metadata: { user: "u_42", plan: "enterprise", ticket: "T-7" } }], nextCursor: null });
  }, 90_000);
});
