import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { WATCH_HEADERS } from "../../durable-objects/session/session-watch.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { REVOCATION_BATCH, TenantWatches } from "../../durable-objects/tenant/tenant-watches.ts";
import type { SessionSnapshot } from "../../schema/watch.ts";
import { adminToken, call } from "./helpers.ts";
import { connect, expectSnapshot, isRunEnd, prompt, settled, watchSetup } from "./watch-helpers.ts";

// Revocation reaches open sockets (docs/api-watch.md "Close codes"): a revoked key's watch sockets
// are closed with 1008, whichever session they watch, while other keys' sockets keep receiving.

async function newKey(tenantId: string): Promise<{ key: string; keyId: string }> {
  const response = await call(`/v1/admin/tenants/${tenantId}/keys`, { body: { name: "second" }, token: adminToken() });
  expect(response.status).toBe(201);
  return response.json();
}

async function revoke(tenantId: string, keyId: string): Promise<void> {
  const response = await call(`/v1/admin/tenants/${tenantId}/keys/${keyId}`, { method: "DELETE", token: adminToken() });
  expect(response.status).toBeLessThan(300);
}

describe("key revocation on open watch sockets", { timeout: 30_000 }, () => {
  it("closes the revoked key's lane and session sockets with 1008; another key's socket keeps receiving", async () => {
    const { tenantId, key, keyId, stub, sessionPath } = await watchSetup("rv_open");
    const other = await newKey(tenantId);
    const lane = await connect(`${sessionPath}/lanes/main/watch`, key);
    const session = await connect<SessionSnapshot>(`${sessionPath}/watch`, key);
    const kept = await connect(`${sessionPath}/lanes/main/watch`, other.key);
    await expectSnapshot(lane);
    await expectSnapshot(session);
    await expectSnapshot(kept);

    await revoke(tenantId, keyId);
    expect((await lane.closed()).code).toBe(1008);
    expect((await session.closed()).code).toBe(1008);

    const runId = await prompt(stub, "main", "after the revocation");
    await kept.until(isRunEnd(runId));
    await settled(stub, "main", runId);
    kept.ws.close(1000);
  });

  it("reaches sockets of several sessions, and sockets of an evicted (hibernated) object", async () => {
    const first = await watchSetup("rv_many");
    const secondSession = await call("/v1/sessions", { body: { id: `${first.sessionId}_b` }, token: first.key });
    expect(secondSession.status).toBe(201);
    const a = await connect(`${first.sessionPath}/watch`, first.key);
    const b = await connect(`/v1/sessions/${first.sessionId}_b/watch`, first.key);
    await expectSnapshot(a);
    await expectSnapshot(b);
    await evictDurableObject(first.stub);

    await revoke(first.tenantId, first.keyId);
    expect((await a.closed()).code).toBe(1008);
    expect((await b.closed()).code).toBe(1008);
  });

  it("refuses an upgrade that reaches the session object after its key was revoked (authorized just before)", async () => {
    const { tenantId, keyId, stub } = await watchSetup("rv_race");
    await revoke(tenantId, keyId);
    // What the front worker forwards once it has verified the key: the object itself must still refuse.
    const response = await stub.fetch("http://session/watch", {
      headers: { upgrade: "websocket", [WATCH_HEADERS.kind]: "lane", [WATCH_HEADERS.lane]: "main", [WATCH_HEADERS.keyId]: keyId },
    });
    expect(response.status).toBe(401);
    expect(response.webSocket).toBeNull();
  });
});

describe("the tenant's record of watch sockets", { timeout: 30_000 }, () => {
  it("reaches every registered session past one batch (the alarm continues), then forgets the revoked key's rows", async () => {
    const { tenantId, key, keyId, sessionPath } = await watchSetup("rv_batch");
    const tenant = env.TENANTS.getByName(tenantId);
    // Registrations of sessions without sockets (a session object answers them with nothing to close).
    for (let i = 0; i < REVOCATION_BATCH + 10; i++) expect(await tenant.registerWatch(keyId, `rv_ghost_${i}`)).toEqual({ active: true });
    const watcher = await connect(`${sessionPath}/watch`, key);
    await expectSnapshot(watcher);

    await revoke(tenantId, keyId);
    expect((await watcher.closed()).code).toBe(1008);
    await eventually(async () => (await registrations(tenantId)) === 0, "the alarm to notify every session");
    expect(await tenant.registerWatch(keyId, "rv_ghost_0")).toEqual({ active: false });
  });

  it("keeps a registration whose session could not be told and retries it from the alarm", async () => {
    const { tenantId, keyId } = await watchSetup("rv_retry");
    const tenant = env.TENANTS.getByName(tenantId);
    await tenant.registerWatch(keyId, "reachable");
    await tenant.registerWatch(keyId, "unreachable");
    await runInDurableObject(tenant, async (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE api_keys SET revoked_at = 1 WHERE key_id = ?", keyId);
      const told: string[] = [];
      let reachable = false;
      const watches = new TenantWatches(state.storage.sql, async (sessionId) => {
        if (sessionId === "unreachable" && !reachable) throw new Error("Network connection lost.");
        told.push(sessionId);
      });
      // The pass answers when the (shared) alarm must run again: a row is left to retry.
      expect(await watches.closeRevoked(Date.now())).toEqual(expect.any(Number));
      expect(told).toEqual(["reachable"]);
      expect(state.storage.sql.exec("SELECT session_id FROM watch_registrations").toArray()).toEqual([{ session_id: "unreachable" }]);
      reachable = true;
      expect(await watches.closeRevoked(Date.now())).toBeUndefined();
      expect(told).toEqual(["reachable", "unreachable"]);
      expect(state.storage.sql.exec("SELECT count(*) AS n FROM watch_registrations").one().n).toBe(0);
      await state.storage.deleteAlarm();
    });
  });
});

async function registrations(tenantId: string): Promise<number> {
  return runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) =>
    Number(state.storage.sql.exec("SELECT count(*) AS n FROM watch_registrations").one().n),
  );
}

async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
