import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LaneInfo, LaneSnapshot } from "../../schema/lane.ts";
import { Api, createTenant, readAdminToken, transcriptText, type ErrorBody, type OperationRecord } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// docs/api.md sections 1 and 2, step by step, over real HTTP against `npm start`.

interface SessionBody {
  id: string;
  name: string;
  createdAt: number;
  lanes: LaneInfo[];
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

  it("admin token → tenant → key → /v1/me → session (idempotent) → lane → prompt → snapshot → list", async () => {
    // 1. A tenant and a key, with the admin token from .dev.vars.
    const tenantId = `acme-${Date.now().toString(36)}`;
    const tenant = await admin.expect<{ id: string; name: string; createdAt: number }>(201, "POST", "/v1/admin/tenants", {
      body: { id: tenantId, name: "Acme" },
    });
    expect(tenant).toMatchObject({ id: tenantId, name: "Acme" });
    expect(typeof tenant.createdAt).toBe("number");
    const created = await admin.expect<{ keyId: string; key: string }>(201, "POST", `/v1/admin/tenants/${tenantId}/keys`, { body: { name: "dev" } });
    expect(created.key.startsWith(`sk_${tenantId}_`)).toBe(true);
    const api = new Api(server.baseUrl, created.key);
    expect(await api.expect(200, "GET", "/v1/me")).toEqual({ tenantId, keyId: created.keyId, usage: expect.objectContaining({ totalTokens: 0 }) });
    // The admin token is not a tenant key, and a tenant key is not an admin token.
    expect((await admin.request<ErrorBody>("GET", "/v1/me")).status).toBe(401);
    expect((await api.request<ErrorBody>("POST", "/v1/admin/tenants", { body: { name: "x" } })).status).toBe(401);

    // 2. A session with an Idempotency-Key; the repeat replays the first response.
    const createSession = () =>
      api.request<SessionBody>("POST", "/v1/sessions", { body: { id: "demo", name: "Demo" }, headers: { "idempotency-key": "demo-1" } });
    const first = await createSession();
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ id: "demo", name: "Demo", lanes: [] });
    const replay = await createSession();
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);
    // Without the key, the same id is a conflict, not a second session.
    const again = await api.request<ErrorBody>("POST", "/v1/sessions", { body: { id: "demo", name: "Demo" } });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("SessionExists");

    // A lane: created (201), then existing (200).
    expect(await api.expect(201, "PUT", "/v1/sessions/demo/lanes/main", { body: {} })).toEqual({ name: "main", tipId: null, operation: null });
    expect((await api.request("PUT", "/v1/sessions/demo/lanes/main", { body: {} })).status).toBe(200);

    // A prompt that waits: the settled record; scripted/echo answers with the last user text.
    const record = await api.expect<OperationRecord>(200, "POST", "/v1/sessions/demo/lanes/main/prompt", {
      body: { prompt: "hello there", wait: 30 },
    });
    expect(record).toMatchObject({ kind: "run", status: "completed", fromTipId: null });
    expect(record.tipId).not.toBeNull();

    const { snapshot } = await api.expect<{ seq: number; snapshot: LaneSnapshot }>(200, "GET", "/v1/sessions/demo/lanes/main/snapshot");
    expect(transcriptText(snapshot)).toEqual(["user: hello there", "assistant: hello there"]);
    expect(snapshot).toMatchObject({ lane: "main", tipId: record.tipId, operation: null, queues: [], faulted: false });
    expect(snapshot.lastResult).toEqual(record);
    expect(snapshot.configuration.model).toEqual({ provider: "scripted", modelId: "echo" });
    expect(snapshot.stats.messageCount).toBe(2);
    // The settled record stays readable by id.
    expect(await api.expect(200, "GET", `/v1/sessions/demo/lanes/main/operations/${record.operationId}`)).toEqual({ state: "settled", result: record });

    // A listing row is the tenant index's summary; the session itself has the lanes.
    const list = await api.expect<{ items: { id: string; name: string | null; createdAt: number }[]; nextCursor: string | null }>(200, "GET", "/v1/sessions?limit=10");
    expect(list.items).toEqual([{ id: "demo", name: "Demo", createdAt: expect.any(Number) }]);
    expect(list.nextCursor).toBeNull();
    const session = await api.expect<SessionBody>(200, "GET", "/v1/sessions/demo");
    expect(session.lanes).toEqual([{ name: "main", tipId: record.tipId, operation: null }]);
  });

  it("a revoked key gets 401 on its next request; other keys of the tenant keep working", async () => {
    const { tenantId, keyId, api } = await createTenant(admin, "revoke");
    const other = await admin.expect<{ keyId: string; key: string }>(201, "POST", `/v1/admin/tenants/${tenantId}/keys`, { body: {} });
    expect((await api.request("GET", "/v1/me")).status).toBe(200);
    expect((await admin.request("DELETE", `/v1/admin/tenants/${tenantId}/keys/${keyId}`)).status).toBe(204);
    const denied = await api.request<ErrorBody>("GET", "/v1/me");
    expect(denied.status).toBe(401);
    expect(denied.body.error.code).toBe("Unauthenticated");
    expect((await api.request<ErrorBody>("GET", "/v1/sessions")).status).toBe(401);
    expect(await new Api(server.baseUrl, other.key).expect(200, "GET", "/v1/me")).toEqual({ tenantId, keyId: other.keyId, usage: expect.any(Object) });
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
