import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { toWire } from "../../schema/wire.ts";
import { unwrap } from "../helpers/sessions.ts";
import { call, newTenant } from "./helpers.ts";
import { expectError, objectOf, scriptedLane, SLOW_STEP, tenantWithSession, user } from "./session-helpers.ts";

// PATCH and DELETE /v1/sessions/{sid}, and the Session shape (spec/API.md "Sessions").

type SessionBody = {
  id: string;
  name: string | null;
  settings: { steeringMode: string; systemPrompt: string | null };
  branches: { name: string; tipId: string | null; lane: boolean }[];
  lanes: { name: string }[];
};

describe("GET /v1/sessions/{sid}", () => {
  it("answers the Session with settings, lanes and lane-marked branches", async () => {
    const { tenantId, key, sid, base } = await tenantWithSession("view");
    unwrap(await objectOf(tenantId, sid).acquireLane("main"));
    expect((await call(`${base}/branches`, { body: { name: "side", at: null }, token: key })).status).toBe(201);
    const session = await (await call(base, { token: key })).json<SessionBody>();
    expect(session).toMatchObject({ id: sid, name: null, settings: { steeringMode: "all", systemPrompt: null }, lanes: [{ name: "main" }] });
    expect(session.branches).toEqual([
      { name: "main", tipId: null, lane: true },
      { name: "side", tipId: null, lane: false },
    ]);
  });
});

describe("PATCH /v1/sessions/{sid}", () => {
  it("sets the name and settings, clears the name with null, and answers the Session", async () => {
    const { key, base } = await tenantWithSession("patch");
    const patched = await call(base, { method: "PATCH", body: { name: "renamed", settings: { steeringMode: "one-at-a-time", systemPrompt: "be brief" } }, token: key });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toMatchObject({ name: "renamed", settings: { steeringMode: "one-at-a-time", systemPrompt: "be brief" } });
    expect(await (await call(base, { token: key })).json()).toMatchObject({ name: "renamed", settings: { steeringMode: "one-at-a-time" } });
    const untouched = await call(base, { method: "PATCH", body: {}, token: key });
    expect(await untouched.json()).toMatchObject({ name: "renamed", settings: { systemPrompt: "be brief" } });
    const cleared = await call(base, { method: "PATCH", body: { name: null }, token: key });
    expect(await cleared.json()).toMatchObject({ name: null, settings: { steeringMode: "one-at-a-time" } });
  });

  it("merges settings like JSON Merge Patch: one nested member changes alone, null goes back to the default, maps merge by name", async () => {
    const { key, base } = await tenantWithSession("merge");
    const patch = async (settings: unknown) => {
      const answer = await call(base, { method: "PATCH", body: { settings }, token: key });
      expect(answer.status).toBe(200);
      return (await answer.json<{ settings: Record<string, unknown> }>()).settings;
    };
    expect(await patch({ compaction: { keepRecentTokens: 20 } })).toMatchObject({ compaction: { enabled: true, reserveTokens: 16384, keepRecentTokens: 20 } });
    expect(await patch({ compaction: { enabled: false }, retry: { maxRetries: 1 } })).toMatchObject({
      compaction: { enabled: false, reserveTokens: 16384, keepRecentTokens: 20 },
      retry: { enabled: true, maxRetries: 1, baseDelayMs: 1000 },
    });
    // null: back to the default (a member of a default-less object is removed).
    expect(await patch({ compaction: { enabled: null }, retry: null })).toMatchObject({ compaction: { enabled: true, keepRecentTokens: 20 }, retry: { enabled: true, maxRetries: 3, baseDelayMs: 1000 } });
    expect(await patch({ streamOptions: { temperature: 0.5, headers: { "x-a": "1", "x-b": "2" } } })).toMatchObject({ streamOptions: { temperature: 0.5, headers: { "x-a": "1", "x-b": "2" } } });
    const merged = await patch({ streamOptions: { maxTokens: 100, headers: { "x-a": null, "x-c": "3" } } });
    expect(merged.streamOptions).toEqual({ temperature: 0.5, maxTokens: 100, headers: { "x-b": "2", "x-c": "3" } });
    expect((await patch({ streamOptions: { temperature: null, headers: null } })).streamOptions).toEqual({ maxTokens: 100 });
    expect(await patch({ systemPrompt: "short", toolExecution: "sequential" })).toMatchObject({ systemPrompt: "short", toolExecution: "sequential" });
    expect(await patch({ systemPrompt: null, toolExecution: null })).toMatchObject({ systemPrompt: null, toolExecution: "parallel", compaction: { keepRecentTokens: 20 } });
    // Two concurrent patches of different members of one object both stick (the merge is on the object's line).
    await Promise.all([patch({ compaction: { reserveTokens: 1000 } }), patch({ compaction: { keepRecentTokens: 30 } })]);
    expect((await (await call(base, { token: key })).json<{ settings: Record<string, unknown> }>()).settings).toMatchObject({ compaction: { enabled: true, reserveTokens: 1000, keepRecentTokens: 30 } });
    // A wrong member is still refused whole, naming it, and nothing is written.
    const refused = await call(base, { method: "PATCH", body: { settings: { compaction: { keepRecentTokens: -1, enabled: false } } }, token: key });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { code: "ValidationFailed", message: expect.stringContaining("settings.compaction.keepRecentTokens") } });
    expect((await (await call(base, { token: key })).json<{ settings: Record<string, unknown> }>()).settings).toMatchObject({ compaction: { enabled: true, keepRecentTokens: 30 } });
  });

  it("bounds header maps merged over several patches: the patch that would pass 64 entries is refused, naming the field, and nothing is written", async () => {
    const { key, base } = await tenantWithSession("mergebound");
    const headers = (from: number) => Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`x-h${from + i}`, "v"]));
    const patch = (settings: unknown) => call(base, { method: "PATCH", body: { settings }, token: key });
    expect((await patch({ streamOptions: { headers: headers(0) } })).status).toBe(200);
    const refused = await patch({ streamOptions: { headers: headers(100), temperature: 1 } });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { code: "ValidationFailed", message: "settings.streamOptions.headers: at most 64 entries" } });
    const settings = (await (await call(base, { token: key })).json<{ settings: { streamOptions: { headers?: Record<string, string>; temperature?: number } } }>()).settings;
    expect(Object.keys(settings.streamOptions.headers ?? {})).toHaveLength(40);
    expect(settings.streamOptions.temperature).toBeUndefined();
    // One patch alone is bounded too, and replacing names keeps the count.
    expect((await patch({ streamOptions: { metadata: headers(0), headers: { ...headers(200), ...headers(300) } } })).status).toBe(400);
    const swapped = { ...Object.fromEntries(Object.keys(headers(0)).slice(0, 30).map((name) => [name, null])), ...Object.fromEntries(Object.entries(headers(100)).slice(0, 30)) };
    const after = await patch({ streamOptions: { headers: swapped } });
    expect(after.status).toBe(200);
    expect(Object.keys((await after.json<{ settings: { streamOptions: { headers: Record<string, string> } } }>()).settings.streamOptions.headers)).toHaveLength(40);
  });

  it("creates a session whose settings are a merge patch over the defaults", async () => {
    const { key } = await newTenant("mergecreate");
    const created = await call("/v1/sessions", { body: { settings: { compaction: { keepRecentTokens: 20 }, retry: { maxRetries: 0 } } }, token: key });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ settings: { compaction: { enabled: true, reserveTokens: 16384, keepRecentTokens: 20 }, retry: { enabled: true, maxRetries: 0, baseDelayMs: 1000 } } });
  });

  it("refuses malformed bodies (400), oversized ones (413), foreign sessions (404) and bad keys (401)", async () => {
    const { key, base, sid } = await tenantWithSession("patchbad");
    const other = await newTenant("patchother");
    for (const body of [{ settings: { steeringMode: "sometimes" } }, { unknown: 1 }, { name: "x".repeat(501) }, { name: 5 }, { settings: { retry: { enabled: "yes" } } }]) {
      await expectError(await call(base, { method: "PATCH", body, token: key }), 400, "ValidationFailed");
    }
    await expectError(await call(base, { method: "PATCH", rawBody: "{nope", token: key }), 400, "ValidationFailed");
    await expectError(await call(base, { method: "PATCH", token: key }), 400, "ValidationFailed");
    await expectError(await call("/v1/sessions/bad:id", { method: "PATCH", body: {}, token: key }), 400, "ValidationFailed");
    const huge = await call(base, { method: "PATCH", rawBody: JSON.stringify({ name: "x".repeat(2 * 1024 * 1024) }), token: key });
    expect(huge.status).toBe(413);
    await expectError(await call(base, { method: "PATCH", body: { name: "stolen" }, token: other.key }), 404, "SessionNotFound");
    await expectError(await call(`/v1/sessions/${sid}_nope`, { method: "PATCH", body: { name: "x" }, token: key }), 404, "SessionNotFound");
    await expectError(await call(base, { method: "PATCH", body: { name: "x" } }), 401, "Unauthenticated");
    await expectError(await call(base, { method: "PATCH", body: { name: "x" }, token: "sk_garbled" }), 401, "Unauthenticated");
    expect(await (await call(base, { token: key })).json()).toMatchObject({ name: null });
  });
});

describe("DELETE /v1/sessions/{sid}", () => {
  it("deletes the session's storage and index row; later requests are 404; the id can be reused", async () => {
    const { tenantId, key, sid, base } = await tenantWithSession("del");
    expect((await call(`${base}/branches`, { body: { name: "main", at: null }, token: key })).status).toBe(201);
    expect((await call(`${base}/values/app/k`, { method: "PUT", body: 1, token: key })).status).toBe(200);
    const deleted = await call(base, { method: "DELETE", token: key });
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe("");
    for (const path of [base, `${base}/branches`, `${base}/values/app/k`, `${base}/entries`, `${base}/usage`]) {
      await expectError(await call(path, { token: key }), 404, "SessionNotFound");
    }
    await expectError(await call(base, { method: "PATCH", body: { name: "x" }, token: key }), 404, "SessionNotFound");
    expect((await (await call("/v1/sessions", { token: key })).json<{ items: unknown[] }>()).items).toEqual([]);
    // Repeating is harmless: still gone, still 404.
    await expectError(await call(base, { method: "DELETE", token: key }), 404, "SessionNotFound");
    // The object holds nothing at all afterwards: not even the empty schema of a session.
    const storage = await runInDurableObject(objectOf(tenantId, sid), async (_instance: SessionObject, state) => ({
      alarm: await state.storage.getAlarm(),
      tables: state.storage.sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('meta', 'vals', 'schema_migrations')").toArray(),
    }));
    expect(storage).toEqual({ alarm: null, tables: [] });
    const again = await call("/v1/sessions", { body: { id: sid }, token: key });
    expect(again.status).toBe(201);
    expect(await again.json()).toMatchObject({ id: sid, branches: [], lanes: [] });
    await expectError(await call(`${base}/values/app/k`, { token: key }), 404, "NotFound");
  });

  it("closes a busy harness first: the run stops, nothing is written afterwards, the alarm is gone", async () => {
    const { tenantId, key, sid, base } = await tenantWithSession("delbusy");
    const stub = await scriptedLane(tenantId, sid, [SLOW_STEP]);
    const admission = unwrap(await stub.acceptOperation("main", toWire({ kind: "prompt", prompt: "go" })));
    expect(admission.operationId).toEqual(expect.any(String));
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(unwrap(await stub.laneExecution("main")).current).not.toBeNull();
    expect((await call(base, { method: "DELETE", token: key })).status).toBe(204);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await expectError(await call(base, { token: key }), 404, "SessionNotFound");
    const storage = await runInDurableObject(objectOf(tenantId, sid), async (_instance: SessionObject, state) => ({
      alarm: await state.storage.getAlarm(),
      tables: state.storage.sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('entries', 'due_work')").toArray(),
    }));
    expect(storage).toEqual({ alarm: null, tables: [] });
  });

  it("is 404 for foreign and unknown sessions (leaving them intact) and 401 without a key", async () => {
    const { key, base, sid } = await tenantWithSession("delforeign");
    const other = await newTenant("delother");
    await expectError(await call(base, { method: "DELETE", token: other.key }), 404, "SessionNotFound");
    await expectError(await call(`/v1/sessions/${sid}_nope`, { method: "DELETE", token: key }), 404, "SessionNotFound");
    await expectError(await call("/v1/sessions/bad:id", { method: "DELETE", token: key }), 400, "ValidationFailed");
    await expectError(await call(base, { method: "DELETE" }), 401, "Unauthenticated");
    await expectError(await call(base, { method: "DELETE", token: "garbage" }), 401, "Unauthenticated");
    expect((await call(base, { token: key })).status).toBe(200);
  });

  it("a DELETE retried after an interruption before unregistering removes the index row", async () => {
    const { tenantId, key, sid, base } = await tenantWithSession("stale");
    expect((await call("/v1/sessions", { body: { id: "kept" }, token: key })).status).toBe(201);
    unwrap(await objectOf(tenantId, sid).deleteSession());
    // The listing reads the tenant's index only (it wakes no session), so the row is still there.
    const listed = async () => (await (await call("/v1/sessions", { token: key })).json<{ items: { id: string }[] }>()).items.map((s) => s.id);
    expect(await listed()).toEqual([sid, "kept"]);
    await expectError(await call(base, { method: "DELETE", token: key }), 404, "SessionNotFound");
    expect(await listed()).toEqual(["kept"]);
  });

  it("a session recreated after deletion starts empty (no old entries)", async () => {
    const { key, base, sid } = await tenantWithSession("recreate");
    await call(`${base}/branches`, { body: { name: "main", at: null }, token: key });
    await call(`${base}/branches/main/entries`, { body: { message: user("old") }, token: key });
    expect((await call(base, { method: "DELETE", token: key })).status).toBe(204);
    expect((await call("/v1/sessions", { body: { id: sid }, token: key })).status).toBe(201);
    expect(await (await call(`${base}/entries`, { token: key })).json()).toEqual({ items: [], nextCursor: null });
  });
});
