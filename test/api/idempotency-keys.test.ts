import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex, type TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { uuidv7Ids } from "../../harness/session/ids.ts";
import { adminToken, call, errorCode, newTenant } from "./helpers.ts";
import { expectError, tenantWithSession } from "./session-helpers.ts";

// Idempotency-Key (ARCHITECTURE D15) hardened: secrets are never replayed, refusals are never
// remembered, keys are scoped per route, nothing is claimed before validation, and a retried
// session creation gets the session it created.

/** The idempotency rows an object holds: key and remembered body. */
function idempotencyRows(stub: DurableObjectStub<TenantObject>): Promise<{ key: string; body: string | null }[]> {
  return runInDurableObject(stub, (_instance: TenantObject, state) => state.storage.sql.exec<{ key: string; body: string | null }>("SELECT key, body FROM idempotency").toArray());
}

describe("Idempotency-Key on key creation", () => {
  it("shows the secret once: a replay names the key and says the secret is not shown again; it is stored nowhere", async () => {
    const { tenantId } = await newTenant("idsecret");
    const request = { body: { name: "ci" }, token: adminToken(), headers: { "idempotency-key": `key-${tenantId}` } };
    const first = await call(`/v1/admin/tenants/${tenantId}/keys`, request);
    expect(first.status).toBe(201);
    const created = await first.json<{ keyId: string; key: string }>();
    const replay = await call(`/v1/admin/tenants/${tenantId}/keys`, request);
    expect(replay.status).toBe(409);
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    const body = await replay.json<{ error: { code: string; details: { keyId: string } } }>();
    expect(body.error).toMatchObject({ code: "KeySecretNotReplayed", details: { keyId: created.keyId } });
    expect(body.error).toMatchObject({ requestId: replay.headers.get("x-request-id") });
    expect(replay.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
    expect(JSON.stringify(body)).not.toContain(created.key);
    const rows = await idempotencyRows(env.TENANTS.getByName("admin:idempotency"));
    expect(rows.some((row) => row.key.endsWith(`key-${tenantId}`))).toBe(true);
    expect(rows.every((row) => !(row.body ?? "").includes(created.key))).toBe(true);
    // Exactly one key was made, and it works.
    expect((await call("/v1/me", { token: created.key })).status).toBe(200);
  });
});

describe("only successes are remembered", () => {
  it("a 429 is not replayed: a client that retries with the same key after Retry-After gets through", async () => {
    const { tenantId, key } = await newTenant("idretry");
    expect((await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 1 }, token: adminToken() })).status).toBe(200);
    const sid = "s_retry";
    expect((await call("/v1/sessions", { body: { id: sid }, token: key })).status).toBe(201);
    expect((await call(`/v1/sessions/${sid}/lanes/main`, { method: "PUT", token: key })).status).toBe(201);
    // The only slot is held by an operation; a refusal has just healed, so the next one does not.
    const tenant = env.TENANTS.getByName(tenantId);
    const held = await tenant.reserveOperation(sid, "main");
    if (!held.ok) throw new Error("the first reservation must fit");
    const operationId = uuidv7Ids.next();
    await tenant.bindOperation(held.reservationId, operationId);
    expect((await tenant.reserveOperation(sid, "main")).ok).toBe(false);

    const request = { body: { prompt: "hello", wait: 10 }, token: key, headers: { "idempotency-key": "prompt-1" } };
    const refused = await call(`/v1/sessions/${sid}/lanes/main/prompt`, request);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toEqual(expect.any(String));
    await tenant.releaseOperation(sid, operationId);
    const retried = await call(`/v1/sessions/${sid}/lanes/main/prompt`, request);
    expect(retried.status).toBe(200);
    expect(retried.headers.get("idempotency-replayed")).toBeNull();
    expect(await retried.json()).toMatchObject({ status: "completed" });
  });

  it("a request still running answers 409 IdempotencyInProgress with Retry-After", async () => {
    const { tenantId, key } = await newTenant("idprogress");
    const body = { name: "slow" };
    // The claim of a first request that is still running, as the route scopes and hashes it.
    await env.TENANTS.getByName(tenantId).idempotencyClaim("POST /v1/sessions\nrunning", await sha256Hex(JSON.stringify(body)));
    const second = await call("/v1/sessions", { body, token: key, headers: { "idempotency-key": "running" } });
    await expectError(second.clone(), 409, "IdempotencyInProgress");
    expect(Number(second.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  });
});

describe("scope and validation", () => {
  it("one key on two routes names two requests (scoped per route), and both succeed", async () => {
    const { key, base } = await tenantWithSession("idscope");
    const headers = { "idempotency-key": "shared" };
    expect((await call(`${base}/branches`, { body: { name: "b1" }, token: key, headers })).status).toBe(201);
    expect((await call(`${base}/lists/app/k`, { body: 1, token: key, headers })).status).toBe(201);
    expect((await call(`${base}/lists/app/other`, { body: 2, token: key, headers })).status).toBe(201);
    const replay = await call(`${base}/branches`, { body: { name: "b1" }, token: key, headers });
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
  });

  it("an invalid or oversized request claims nothing and is never replayed; the key stays free", async () => {
    const { tenantId, key } = await newTenant("idvalid");
    const headers = { "idempotency-key": "fresh" };
    await expectError(await call("/v1/sessions", { body: { id: "bad id" }, token: key, headers }), 400, "ValidationFailed");
    await expectError(await call("/v1/sessions", { rawBody: "{nope", token: key, headers: { ...headers, "content-type": "application/json" } }), 400, "ValidationFailed");
    const oversized = await call("/v1/sessions", { body: { name: "x".repeat(2 * 1024 * 1024) }, token: key, headers });
    expect(oversized.status).toBe(413);
    expect(await idempotencyRows(env.TENANTS.getByName(tenantId))).toEqual([]);
    const created = await call("/v1/sessions", { body: { id: "good" }, token: key, headers });
    expect(created.status).toBe(201);
    expect(created.headers.get("idempotency-replayed")).toBeNull();
  });
});

describe("session creation is one step a retry can complete", () => {
  it("a retry after the answer was lost part-way (claim released, not yet listed) gets the same session", async () => {
    const { tenantId, key } = await newTenant("idresume");
    const request = { body: { name: "resumed", settings: { systemPrompt: "Be brief." } }, token: key, headers: { "idempotency-key": "create-once" } };
    const first = await call("/v1/sessions", request);
    expect(first.status).toBe(201);
    const session = await first.json<{ id: string; name: string }>();
    // What a failure after the session object's commit leaves: no remembered answer, no index row.
    const tenant = env.TENANTS.getByName(tenantId);
    await runInDurableObject(tenant, (_instance: TenantObject, state) => {
      state.storage.sql.exec("DELETE FROM idempotency");
    });
    await tenant.unregisterSession(session.id);
    const retry = await call("/v1/sessions", request);
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotency-replayed")).toBeNull();
    expect(await retry.json()).toMatchObject({ id: session.id, name: "resumed", settings: { systemPrompt: "Be brief." } });
    const listed = await (await call("/v1/sessions", { token: key })).json<{ items: { id: string }[] }>();
    expect(listed.items.map((item) => item.id)).toEqual([session.id]);
    // Without the key, the same id is a conflict, as before.
    expect(await errorCode(await call("/v1/sessions", { body: { id: session.id }, token: key }))).toBe("SessionExists");
  });
});
