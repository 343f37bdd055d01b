import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { uuidv7Ids } from "../../harness/session/ids.ts";
import { adminToken, call } from "./helpers.ts";
import { command, laneSocket } from "./socket-command-helpers.ts";
import { connect, expectSnapshot } from "./watch-helpers.ts";

// A command's reply carries the status and body its REST twin answers in the same situation
// (docs/api-watch.md "Commands on the socket"): the quota healed as REST heals it, a transient
// platform failure as 503, refusals with REST's details, and a repeated id paid like a repeated
// Idempotency-Key.

// A refused open-operation reservation is healed once (open operations whose sessions no longer
// have them are released) before it becomes 429, on the socket as over REST
// (tenant/stale-operations.ts).

describe("a socket prompt at the open-operations quota with a lost release", { timeout: 60_000 }, () => {
  it("starts the run, as POST …/operations does (the stale slot is healed), instead of 429 RateLimited", async () => {
    const { setup, client } = await laneSocket("rsheal");
    expect((await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 1 }, token: adminToken() })).status).toBe(200);
    // The tenant counts an operation this session does not have open (its release was lost).
    const tenant = env.TENANTS.getByName(setup.tenantId);
    const reserved = await tenant.reserveOperation(setup.sessionId, "main");
    if (!reserved.ok) throw new Error("within the quota");
    await tenant.bindOperation(reserved.reservationId, uuidv7Ids.next());

    const { reply } = await command(client, { type: "prompt", id: "p1", prompt: "hello" });
    // POST …/operations in this same situation answers 202.
    expect({ status: reply.status, code: reply.body.error?.code }).toEqual({ status: 202, code: undefined });
    client.ws.close();
  });
});

// A transient platform failure of the tenant call a command makes (the runtime marks it
// `retryable`, as for "Network connection lost") is 503 Overloaded with
// `details.retryAfterSeconds`, as over REST (rpc/platform-errors.ts; "a 500 Internal is a bug").

/** Runs `body` while the tenant object's open-operation calls fail as a lost connection does (then restored). */
async function withTransientTenant(tenantId: string, body: () => Promise<void>): Promise<void> {
  const prototype = await runInDurableObject(env.TENANTS.getByName(tenantId), (instance: TenantObject) => Object.getPrototypeOf(instance) as TenantObject);
  const { reserveOperation, authorizeAndReserve } = prototype;
  const lost = (): never => {
    throw Object.assign(new Error("Network connection lost."), { retryable: true });
  };
  prototype.reserveOperation = lost;
  prototype.authorizeAndReserve = lost;
  try {
    await body();
  } finally {
    prototype.reserveOperation = reserveOperation;
    prototype.authorizeAndReserve = authorizeAndReserve;
  }
}

describe("a socket prompt whose slot reservation fails transiently", { timeout: 60_000 }, () => {
  it("is answered 503 Overloaded with retryAfterSeconds, as POST …/operations is, not 500 Internal", async () => {
    const { setup, client } = await laneSocket("rstrans");
    await withTransientTenant(setup.tenantId, async () => {
      const rest = await call(`${setup.sessionPath}/lanes/main/operations`, { body: { kind: "prompt", prompt: "over REST" }, token: setup.key });
      const restError = (await rest.json<{ error: { code: string; details?: unknown } }>()).error;
      expect({ status: rest.status, code: restError.code }).toEqual({ status: 503, code: "Overloaded" });

      const { reply } = await command(client, { type: "prompt", id: "p1", prompt: "over the socket" });
      expect({ status: reply.status, code: reply.body.error?.code, retryAfterSeconds: reply.body.error?.details?.retryAfterSeconds }).toEqual({
        status: 503,
        code: "Overloaded",
        retryAfterSeconds: expect.any(Number),
      });
    });
    client.ws.close();
  });
});

// A refusal's reply carries the REST twin's error details too.

describe("socket command refusals carry the REST twin's error details", { timeout: 60_000 }, () => {
  it("a watch-only browser token's command: 403 TokenScope with details.scope, as POST …/operations answers", async () => {
    const { setup, client } = await laneSocket("rsdet1");
    const minted = await call(`${setup.sessionPath}/tokens`, { body: { scopes: ["watch"] }, token: setup.key });
    expect(minted.status).toBe(201);
    const { token } = await minted.json<{ token: string }>();
    const rest = await call(`${setup.sessionPath}/lanes/main/operations`, { body: { kind: "prompt", prompt: "hi" }, token });
    const restError = (await rest.json<{ error: { code: string; details?: unknown } }>()).error;
    expect(restError).toMatchObject({ code: "TokenScope", details: { scope: "prompt" } });

    const watcher = await connect<unknown>(`${setup.sessionPath}/lanes/main/watch`, { protocols: [`bearer.${token}`] });
    await expectSnapshot(watcher);
    const { reply } = await command(watcher, { type: "prompt", id: "w1", prompt: "hi" });
    expect({ status: reply.status, code: reply.body.error?.code, details: reply.body.error?.details }).toEqual({ status: rest.status, code: restError.code, details: restError.details });
    watcher.ws.close();
    client.ws.close();
  });

  it("a malformed queue frame: 400 ValidationFailed in the API's words with details.issues, as POST …/queue answers", async () => {
    const { setup, client } = await laneSocket("rsdet2");
    const body = { kind: "steer" };
    const rest = await call(`${setup.sessionPath}/lanes/main/queue`, { body, token: setup.key });
    const restError = (await rest.json<{ error: { code: string; message: string; details?: unknown } }>()).error;
    expect(restError).toMatchObject({ code: "ValidationFailed", details: { issues: expect.any(Array) } });

    const { reply } = await command(client, { type: "queue", id: "bad", ...body });
    expect({ status: reply.status, code: reply.body.error?.code, details: reply.body.error?.details }).toEqual({ status: 400, code: "ValidationFailed", details: restError.details });
    client.ws.close();
  });
});

// Each command is one request of the tenant's per-minute quota (docs/api-watch.md), a repeated id
// too: its REST twin pays an Idempotency-Key repeat before answering it, so over the quota both
// are 429.

describe("a repeated command id when the tenant's request quota is used up", { timeout: 60_000 }, () => {
  it("is 429 RateLimited like its REST twin's repeat, not the first reply for free", async () => {
    const { setup, client } = await laneSocket("rsrq");
    const first = await command(client, { type: "queue", id: "q1", kind: "nextRun", message: "one" });
    expect(first.reply.status).toBe(201);
    const restFirst = await call(`${setup.sessionPath}/lanes/main/queue`, { body: { kind: "nextRun", message: "rest" }, token: setup.key, headers: { "idempotency-key": "k1" } });
    expect(restFirst.status).toBe(201);

    // A quota of one request a minute, already spent; the session object's lease is gone with its restart.
    expect((await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { requestsPerMinute: 1 }, token: adminToken() })).status).toBe(200);
    await evictDurableObject(setup.stub);

    const restRepeat = await call(`${setup.sessionPath}/lanes/main/queue`, { body: { kind: "nextRun", message: "rest" }, token: setup.key, headers: { "idempotency-key": "k1" } });
    expect(restRepeat.status).toBe(429);
    const fresh = await command(client, { type: "queue", id: "q2", kind: "nextRun", message: "two" });
    expect(fresh.reply.status).toBe(429);

    const repeats: number[] = [];
    for (let i = 0; i < 3; i++) repeats.push((await command(client, { type: "queue", id: "q1", kind: "nextRun", message: "one" })).reply.status);
    expect(repeats).toEqual([429, 429, 429]);
    client.ws.close();
  });
});
