import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LaneInfo } from "../../schema/lane.ts";
import { Api, createTenant, readAdminToken, type ErrorBody } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { fencedBlocks } from "./doc-blocks.ts";

// docs/api.md as a new user follows it: its `sh` blocks, exactly as written, run in order in one
// bash against `npm start` (only the documented address is replaced by the test server's), from
// the repository folder where `npm start` wrote .dev.vars. Then what the walkthrough implies about
// keys and tenants, over real HTTP.

const run = promisify(execFile);
const repo = fileURLToPath(new URL("../../", import.meta.url));
const DOCUMENTED_BASE = "http://127.0.0.1:8787";

interface SessionBody {
  id: string;
  name: string;
  createdAt: number;
  lanes: LaneInfo[];
}

/** Runs the blocks in one bash (variables carry over) and answers each block's output. */
async function runBlocks(blocks: string[], base: string): Promise<string[]> {
  const script = blocks.map((block, index) => `echo "@@block ${index}"\n${block.replaceAll(DOCUMENTED_BASE, base)}\necho`).join("\n");
  const { stdout } = await run("bash", ["-c", `set -euo pipefail\n${script}`], { cwd: repo, timeout: 150_000, maxBuffer: 16 * 1024 * 1024 });
  return stdout.split(/^@@block \d+$/m).slice(1);
}

describe("the docs/api.md walkthrough", () => {
  let server: DevServer;
  let admin: Api;
  beforeAll(async () => {
    server = await startDevServer();
    // start.mjs created .dev.vars (with a random token) if it was missing; the user reads it from there.
    admin = new Api(server.baseUrl, readAdminToken());
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
  });

  it("runs every shell block of docs/api.md as written: key, session, prompt, scripted steer, watch", async () => {
    const blocks = fencedBlocks("docs/api.md", "sh");
    expect(blocks).toHaveLength(4);
    expect(blocks[0]).toContain(`export BASE=${DOCUMENTED_BASE}`);
    const [key, prompt, scripted, watch] = await runBlocks(blocks, server.baseUrl);

    // 1. The tenant, and /v1/me with its new key.
    expect(key).toContain('{"id":"acme","name":"Acme"');
    expect(key).toContain('"tenantId":"acme"');
    // 2. The session, the lane, the prompt's answer with the run's messages, the snapshot.
    expect(prompt).toMatch(/^\s*\{"id":"demo","tenantId":"acme","name":"Demo"/);
    expect(prompt).toContain('{"name":"main","tipId":null,"operation":null}');
    expect(prompt).toMatch(/"kind":"run","status":"completed".*"messages":\[\{"role":"user","content":"hello there".*"text":"hello there".*"messagesTruncated":false/);
    expect(prompt).toContain('"snapshot":{');
    // 3. The unknown model is refused by name; the steered run settles with two turns on the branch.
    expect(scripted).toMatch(/"code":"UnknownModel","message":"Unknown model scripted\/nope/);
    expect(scripted).toContain('{"model":{"provider":"scripted","modelId":"script"}');
    expect(scripted).toMatch(/"state":"settled","result":\{[^}]*"status":"completed"/);
    const order = ["\"go\"", "a slow answer that streams word by word", "also mention the weather", "and a second turn after the steer"].map((text) => scripted?.lastIndexOf(text) ?? -1);
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    // 4. The watch: a snapshot first, then the run's events from its start to its end.
    // (curl prints no newline, so the first socket message shares a line with curl's answer.)
    const received = [...(watch ?? "").matchAll(/\{"type":"(snapshot|event)","seq":\d+,"(?:snapshot|event)":\{"(?:lane|type)":"([a-z_]+)"/g)];
    expect(received[0]?.[1]).toBe("snapshot");
    const types = received.slice(1).map((match) => match[2]);
    expect(types[0]).toBe("run_start");
    expect(types).toContain("message_update");
    expect(types.at(-1)).toBe("run_end");
  }, 180_000);

  it("a revoked key gets 401 on its next request; other keys of the tenant keep working", async () => {
    const { tenantId, keyId, api } = await createTenant(admin, "revoke");
    const other = await admin.expect<{ keyId: string; key: string }>(201, "POST", `/v1/admin/tenants/${tenantId}/keys`, { body: {} });
    expect((await api.request("GET", "/v1/me")).status).toBe(200);
    expect((await admin.request("DELETE", `/v1/admin/tenants/${tenantId}/keys/${keyId}`)).status).toBe(204);
    const denied = await api.request<ErrorBody>("GET", "/v1/me");
    expect(denied.status).toBe(401);
    expect(denied.body.error.code).toBe("Unauthenticated");
    expect((await api.request<ErrorBody>("GET", "/v1/sessions")).status).toBe(401);
    expect(await new Api(server.baseUrl, other.key).expect(200, "GET", "/v1/me")).toEqual({ tenantId, keyId: other.keyId, defaultModel: null, usage: expect.any(Object) });
  });

  it("another tenant gets 404 on the first tenant's session, as if it did not exist", async () => {
    const owner = await createTenant(admin, "owner");
    const stranger = await createTenant(admin, "stranger");
    await owner.api.expect(201, "POST", "/v1/sessions", { body: { id: "private" } });
    await owner.api.expect(201, "PUT", "/v1/sessions/private/lanes/main", { body: {} });

    for (const [method, path] of [
      ["GET", "/v1/sessions/private"],
      ["GET", "/v1/sessions/private/lanes/main/snapshot"],
      ["DELETE", "/v1/sessions/private"],
    ] as const) {
      const reply = await stranger.api.request<ErrorBody>(method, path);
      expect(reply.status, `${method} ${path}`).toBe(404);
      expect(reply.body.error.code).toBe("SessionNotFound");
    }
    const prompt = await stranger.api.request<ErrorBody>("POST", "/v1/sessions/private/lanes/main/prompt", { body: { prompt: "hi", wait: 5 } });
    expect(prompt.status).toBe(404);
    // The same answer as a session that does not exist at all.
    const missing = await stranger.api.request<ErrorBody>("GET", "/v1/sessions/nope");
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("SessionNotFound");
    expect((await stranger.api.expect<{ items: SessionBody[] }>(200, "GET", "/v1/sessions")).items).toEqual([]);
    // The owner still has it, untouched.
    expect(await owner.api.expect(200, "GET", "/v1/sessions/private")).toMatchObject({ id: "private", lanes: [{ name: "main", tipId: null }] });
  });
});
