import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionSummary } from "../../schema/api.ts";
import { ApiRequestError, createClient, isApiError, toResult, type AgentSessionsClient, type FetchLike } from "../../client/index.ts";
import { adminToken, newTenant } from "../api/helpers.ts";

// The SDK against the real app in workerd: its injectable fetch calls the worker's own handler.

interface Recorded {
  method: string;
  url: string;
  headers: Headers;
}

function appFetch(log: Recorded[] = []): FetchLike {
  return (input, init) => {
    log.push({ method: init?.method ?? "GET", url: input, headers: new Headers(init?.headers) });
    return exports.default.fetch(input, init);
  };
}

async function tenantClient(prefix: string, log?: Recorded[]): Promise<{ client: AgentSessionsClient; tenantId: string; keyId: string; key: string }> {
  const tenant = await newTenant(prefix);
  return { ...tenant, client: createClient({ baseUrl: "http://api.test/", key: tenant.key, fetch: appFetch(log) }) };
}

/** The rejection of `promise`, which must be an ApiRequestError. */
async function apiError(promise: Promise<unknown>): Promise<ApiRequestError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!(error instanceof ApiRequestError)) throw new Error(`Expected an ApiRequestError, got ${String(error)}`);
  return error;
}

describe("client SDK over the real app", { timeout: 30_000 }, () => {
  it("runs a full flow: session, lane, prompt, snapshot, entries, and lists every session with the iterator", async () => {
    const { client, tenantId, keyId } = await tenantClient("sdk_flow");
    expect(await client.me()).toEqual({ tenantId, keyId, defaultModel: null, usage: expect.objectContaining({ totalTokens: 0 }) });
    const echo = { provider: "scripted", modelId: "echo" };
    expect(await client.setDefaultModel(echo)).toEqual(echo);
    expect((await client.me()).defaultModel).toEqual(echo);
    await client.deleteDefaultModel();
    expect((await client.me()).defaultModel).toBeNull();
    expect(await client.health()).toEqual({ status: "ok" });
    expect((await client.openApiDocument()).openapi).toEqual(expect.stringMatching(/^3\./));
    expect(await client.models()).toContainEqual(expect.objectContaining({ provider: "scripted", modelId: "echo", name: expect.any(String), cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } }));

    const session = await client.sessions.create({ name: "sdk demo", settings: { systemPrompt: "be brief" } });
    expect(session).toMatchObject({ name: "sdk demo", tenantId, settings: { systemPrompt: "be brief" }, lanes: [], branches: [] });
    const put = await client.lanes.put(session.id, "main");
    expect(put).toEqual({ created: true, lane: { name: "main", tipId: null, operation: null } });
    expect((await client.lanes.put(session.id, "main")).created).toBe(false);
    expect(await client.lanes.configure(session.id, "main", { thinkingLevel: "low" })).toMatchObject({ thinkingLevel: "low" });

    const outcome = await client.prompt(session.id, "main", "hello from the sdk");
    if (outcome.state !== "settled") throw new Error(`expected a settled prompt, got ${outcome.state}`);
    expect(outcome.result).toMatchObject({ kind: "run", status: "completed" });

    const { snapshot } = await client.lanes.snapshot(session.id, "main");
    const { messages, messagesTruncated, ...record } = outcome.result;
    expect(snapshot.lastResult).toEqual(record);
    expect({ last: messages.at(-1)?.role, messagesTruncated }).toEqual({ last: "assistant", messagesTruncated: false });
    expect(snapshot.tipId).toBe(outcome.result.tipId);
    const roles = snapshot.transcript.map((entry) => (entry.type === "message" ? entry.message.role : entry.type));
    expect(roles).toEqual(["user", "assistant"]);
    const answer = snapshot.transcript[1];
    expect(answer?.type === "message" && answer.message.role === "assistant" && answer.message.content).toEqual([
      expect.objectContaining({ type: "text", text: expect.stringContaining("hello from the sdk") }),
    ]);

    const execution = await client.lanes.get(session.id, "main");
    expect(execution).toMatchObject({ lane: "main", tipId: snapshot.tipId, current: null, lastOperationId: outcome.result.operationId });
    expect(await client.lanes.list(session.id)).toEqual({ items: [{ name: "main", tipId: snapshot.tipId, operation: null }], nextCursor: null });
    const entries = await client.entries.list(session.id);
    expect(entries.items.map((entry) => entry.id)).toEqual(snapshot.transcript.map((entry) => entry.id));
    expect(entries.nextCursor).toBeNull();
    const usage = await client.usage(session.id);
    expect(usage.rows).toHaveLength(1);
    expect(usage.totals).toEqual(snapshot.stats.usage);
    const renamed = await client.sessions.patch(session.id, { name: null });
    expect(renamed).toMatchObject({ name: null, branches: [{ name: "main", tipId: snapshot.tipId, lane: true }] });

    // Paging: four more sessions, listed two per page by the iterator.
    const others = await Promise.all([1, 2, 3, 4].map((n) => client.sessions.create({ name: `extra ${n}` })));
    const firstPage = await client.sessions.list({ limit: 2 });
    expect(firstPage.items).toHaveLength(2);
    expect(firstPage.nextCursor).toEqual(expect.any(String));
    const listed: SessionSummary[] = [];
    for await (const item of client.sessions.all({ limit: 2 })) listed.push(item);
    expect(listed.map((item) => item.id).sort()).toEqual([session.id, ...others.map((other) => other.id)].sort());
    // `order: "desc"` lists the same sessions newest first.
    const newestFirst: SessionSummary[] = [];
    for await (const item of client.sessions.all({ limit: 2, order: "desc" })) newestFirst.push(item);
    expect(newestFirst).toEqual([...listed].reverse());
  });

  it("creates with metadata, merges it with patch, and finds sessions by it with list and all", async () => {
    const log: Recorded[] = [];
    const { client } = await tenantClient("sdk_meta", log);
    const first = await client.sessions.create({ id: "m1", metadata: { user: "u_42", plan: "pro" } });
    expect(first.metadata).toEqual({ user: "u_42", plan: "pro" });
    await client.sessions.create({ id: "m2", metadata: { user: "u_42" } });
    await client.sessions.create({ id: "m3", metadata: { user: "u_7" } });
    const patched = await client.sessions.patch("m2", { metadata: { plan: "pro", user: null } });
    expect(patched.metadata).toEqual({ plan: "pro" });
    const page = await client.sessions.list({ metadata: { plan: "pro" }, order: "desc", status: "idle", createdAfter: 0, limit: 10 });
    expect(page.items.map((item) => item.id)).toEqual(["m2", "m1"]);
    expect(new URL(log[log.length - 1]?.url ?? "").searchParams.get("metadata.plan")).toBe("pro");
    const found: SessionSummary[] = [];
    for await (const item of client.sessions.all({ metadata: { user: "u_42", plan: "pro" }, limit: 1 })) found.push(item);
    expect(found).toEqual([{ id: "m1", name: null, createdAt: first.createdAt, metadata: { user: "u_42", plan: "pro" } }]);
    expect(await apiError(client.sessions.patch("m1", { metadata: Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`k${i}`, "v"])) }))).toMatchObject({ status: 422, code: "LimitExceeded" });
  });

  it("covers values, lists, labels, branches, queue and the operation primitives", async () => {
    const { client } = await tenantClient("sdk_data");
    const { id } = await client.sessions.create();
    await client.lanes.put(id, "main");

    const written = await client.values.set(id, "app", "a/b", { n: 1 });
    expect(await client.values.get(id, "app", "a/b")).toEqual({ value: { n: 1 }, seq: written.seq });
    await client.values.set(id, "app", "a/b", null);
    expect((await client.values.get(id, "app", "a/b")).value).toBeNull();
    await client.values.delete(id, "app", "a/b");
    expect((await apiError(client.values.get(id, "app", "a/b"))).code).toBe("NotFound");
    expect(await apiError(client.values.set(id, "pi", "x", 1))).toMatchObject({ status: 400, code: "ReservedNamespace" });

    for (const value of ["x", "y", "z"]) await client.lists.append(id, "app", "log", value);
    const page = await client.lists.read(id, "app", "log", { limit: 2, order: "desc" });
    expect(page.items.map((item) => item.value)).toEqual(["z", "y"]);
    const all: unknown[] = [];
    for await (const item of client.lists.all(id, "app", "log", { limit: 1 })) all.push(item.value);
    expect(all).toEqual(["x", "y", "z"]);
    await client.lists.delete(id, "app", "log");
    expect((await client.lists.read(id, "app", "log")).items).toEqual([]);

    const placed = await client.lanes.append(id, "main", { customType: "note", data: { a: 1 } });
    expect(placed).toEqual({ entryId: expect.any(String), placed: true });
    expect(await client.entries.setLabel(id, placed.entryId, "start")).toEqual({ entryId: placed.entryId, label: "start" });
    await client.entries.deleteLabel(id, placed.entryId);
    expect(await client.entries.get(id, placed.entryId)).toMatchObject({ id: placed.entryId, type: "custom", customType: "note" });
    expect((await apiError(client.entries.get(id, "missing"))).code).toBe("UnknownEntry");

    expect(await client.branches.create(id, { name: "side", at: placed.entryId })).toEqual({ name: "side", tipId: placed.entryId });
    const appended = await client.branches.append(id, "side", { customType: "side-note" });
    expect(appended.placed).toBe(true);
    const scanned = await client.branches.entries(id, "side", { order: "asc" });
    expect(scanned.items.map((entry) => entry.id)).toEqual([placed.entryId, appended.entryId]);
    const walked: string[] = [];
    for await (const entry of client.branches.allEntries(id, "side", { limit: 1 })) walked.push(entry.id);
    expect(walked).toEqual([appended.entryId, placed.entryId]);
    expect((await client.branches.list(id)).items).toEqual([
      { name: "main", tipId: placed.entryId, lane: true },
      { name: "side", tipId: appended.entryId, lane: false },
    ]);

    const queued = await client.queue.nextRun(id, "main", "later");
    expect((await client.lanes.get(id, "main")).queues).toEqual([expect.objectContaining({ entryId: queued.entryId, kind: "nextRun" })]);
    expect(await client.queue.cancel(id, "main", queued.entryId)).toBe("cancelled");
    expect(await client.queue.cancel(id, "main", queued.entryId)).toBe("not_found");

    const admission = await client.operations.accept(id, "main", { kind: "prompt", prompt: "primitive" });
    expect(admission).toMatchObject({ operationId: expect.any(String), kind: "run" });
    const view = await client.operations.get(id, "main", admission.operationId, { wait: 10 });
    expect(view).toMatchObject({ state: "settled", result: { operationId: admission.operationId, status: "completed" } });
    expect(await client.operations.resume(id, "main", admission.operationId)).toEqual(view);
    expect(await apiError(client.operations.abort(id, "main", admission.operationId))).toMatchObject({ status: 409, code: "OperationMismatch" });
    expect(await apiError(client.operations.get(id, "main", "unknown_op"))).toMatchObject({ status: 404, code: "OperationMismatch" });
    expect(await apiError(client.abort(id, "main"))).toMatchObject({ status: 422, code: "NoActiveOperation" });
    expect(await apiError(client.resume(id, "main"))).toMatchObject({ status: 422, code: "NothingToResume" });

    await client.sessions.delete(id);
    expect(await apiError(client.sessions.get(id))).toMatchObject({ status: 404, code: "SessionNotFound" });
  });

  it("turns error bodies into typed ApiRequestErrors (401, 404 SessionNotFound, 400 ValidationFailed)", async () => {
    const { client } = await tenantClient("sdk_errors");
    const anonymous = createClient({ baseUrl: "http://api.test", key: "sk_nobody_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", fetch: appFetch() });
    const unauthenticated = await apiError(anonymous.sessions.list());
    expect(unauthenticated).toMatchObject({ name: "ApiRequestError", status: 401, code: "Unauthenticated", rawCode: "Unauthenticated" });
    expect(unauthenticated.requestId).toEqual(expect.any(String));

    const missing = await apiError(client.sessions.get("no_such_session"));
    expect(missing).toMatchObject({ status: 404, code: "SessionNotFound", message: expect.any(String) });
    expect(isApiError(missing, "SessionNotFound")).toBe(true);
    expect(isApiError(missing, "UnknownLane")).toBe(false);
    expect(isApiError(new Error("plain"))).toBe(false);

    const invalid = await apiError(client.sessions.create({ id: "not a valid id!" }));
    expect(invalid).toMatchObject({ status: 400, code: "ValidationFailed" });
    expect(invalid.details?.issues).toEqual([expect.stringContaining("id")]);

    const result = await toResult(client.lanes.get("no_such_session", "main"));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe("SessionNotFound");
    const fine = await toResult(client.me());
    expect(fine.ok && fine.value.tenantId).toEqual(expect.any(String));
  });

  it("sends Idempotency-Key: a repeated create replays the first response; another body is 422", async () => {
    const log: Recorded[] = [];
    const { client } = await tenantClient("sdk_idem", log);
    const first = await client.sessions.create({ name: "once" }, { idempotencyKey: "sdk-create-1" });
    const again = await client.sessions.create({ name: "once" }, { idempotencyKey: "sdk-create-1" });
    expect(again.id).toBe(first.id);
    expect(log.at(-1)?.headers.get("idempotency-key")).toBe("sdk-create-1");
    expect(log.at(-1)?.headers.get("authorization")).toMatch(/^Bearer sk_/);
    const conflict = await apiError(client.sessions.create({ name: "other" }, { idempotencyKey: "sdk-create-1" }));
    expect(conflict).toMatchObject({ status: 422, code: "IdempotencyConflict" });
    // Without the option no header is sent, and a second create is a second session.
    const plain = await client.sessions.create({ name: "once" });
    expect(log.at(-1)?.headers.has("idempotency-key")).toBe(false);
    expect(plain.id).not.toBe(first.id);

    await client.lanes.put(first.id, "main");
    const prompted = await client.prompt(first.id, "main", "only once", { idempotencyKey: "sdk-prompt-1" });
    const replayed = await client.prompt(first.id, "main", "only once", { idempotencyKey: "sdk-prompt-1" });
    expect(replayed).toEqual(prompted);
    const entries = await client.entries.list(first.id, { type: "message" });
    expect(entries.items).toHaveLength(2);
  });

  it("administers tenants and keys with the admin token; a revoked key is refused at once", async () => {
    const admin = createClient({ baseUrl: "http://api.test", adminToken: adminToken(), fetch: appFetch() });
    const tenantId = `sdk_admin_${crypto.randomUUID().slice(0, 8)}`;
    expect(await admin.admin.createTenant({ id: tenantId, name: "SDK" })).toEqual({ id: tenantId, name: "SDK", createdAt: expect.any(Number) });
    expect(await apiError(admin.admin.createTenant({ id: tenantId }))).toMatchObject({ status: 409, code: "TenantExists" });
    const { keyId, key } = await admin.admin.createKey(tenantId, { name: "ci" });
    const tenant = createClient({ baseUrl: "http://api.test", key, fetch: appFetch() });
    expect(await tenant.me()).toEqual({ tenantId, keyId, defaultModel: null, usage: expect.objectContaining({ totalTokens: 0 }) });
    await admin.admin.revokeKey(tenantId, keyId);
    expect(await apiError(tenant.me())).toMatchObject({ status: 401, code: "Unauthenticated" });
    const noToken = createClient({ baseUrl: "http://api.test", key, fetch: appFetch() });
    expect(await apiError(noToken.admin.createTenant())).toMatchObject({ status: 401 });
  });
});
