import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { shardOf } from "../../durable-objects/session/due-work/deferred-registrations.ts";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { DELETIONS_PER_TICK } from "../../durable-objects/tenant/data-lifecycle.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import type { TenantDetail } from "../../schema/data-lifecycle.ts";
import { blockSessionRows } from "./deferred-helpers.ts";
import { adminToken, call, newTenant } from "./helpers.ts";
import { objectOf } from "./session-helpers.ts";
import { connect, expectSnapshot, watchSetup } from "./watch-helpers.ts";
import { eventually } from "./webhooks-helpers.ts";

// Issue 35 item 3 (API.md "Data lifecycle"): DELETE /v1/admin/tenants/{tenantId} marks the tenant
// deleting at once and deletes its sessions in the background, then the tenant itself, keeping
// its id reserved.

const admin = (path: string, method = "GET", body?: unknown) => call(`/v1/admin${path}`, { method, token: adminToken(), ...(body !== undefined && { body }) });

async function detail(tenantId: string): Promise<{ status: number; body: TenantDetail | null }> {
  const response = await admin(`/tenants/${tenantId}`);
  return { status: response.status, body: response.status === 200 ? await response.json<TenantDetail>() : null };
}

/** Every tenant of the admin listing, page after page (the files of a run create hundreds). */
async function allTenants(): Promise<{ id: string; status?: string }[]> {
  const tenants: { id: string; status?: string }[] = [];
  let cursor: string | null = null;
  do {
    const page: { items: { id: string; status?: string }[]; nextCursor: string | null } = await (await admin(`/tenants?limit=200${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`)).json();
    tenants.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return tenants;
}

/** Whether the session's object still holds any table of its own. */
function holdsStorage(tenantId: string, sid: string): Promise<boolean> {
  return runInDurableObject(objectOf(tenantId, sid), (_instance: SessionObject, state) =>
    state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\'").toArray().length > 0,
  );
}

/** Makes each session's DeferredIndex shard refuse its removal (as unreachable shards would), or heals them. */
async function blockRemovals(tenantId: string, sessions: readonly string[], blocked: boolean): Promise<void> {
  for (const sid of sessions) {
    const name = `${tenantId}:${sid}`;
    await blockSessionRows(env.DEFERRED_INDEX.getByName(shardOf(name)), name, blocked);
  }
}

describe("issue 35: deleting a tenant", { timeout: 60_000 }, () => {
  it("refuses its key and closes its socket at once, creates nothing new, deletes every session across alarm ticks, then answers 404 and keeps the id reserved", async () => {
    const { tenantId, key, sessionId, sessionPath } = await watchSetup("tdel");
    const sessions = [sessionId];
    for (let index = 0; index < DELETIONS_PER_TICK + 10; index++) {
      const created = await call("/v1/sessions", { body: { id: `tdel_${index}` }, token: key });
      expect(created.status).toBe(201);
      sessions.push(`tdel_${index}`);
    }
    const socket = await connect(`${sessionPath}/watch`, key);
    await expectSnapshot(socket);
    const minted = await call(`${sessionPath}/tokens`, { body: { scopes: ["watch"] }, token: key });
    expect(minted.status).toBe(201);
    const { token } = await minted.json<{ token: string }>();
    // The key and the token are verified and trusted by this isolate before the deletion.
    expect((await call("/v1/sessions", { token: key })).status).toBe(200);
    expect((await call(`${sessionPath}/lanes/main/snapshot`, { token })).status).toBe(200);

    await blockRemovals(tenantId, sessions, true);
    const deleted = await admin(`/tenants/${tenantId}`, "DELETE");
    expect(deleted.status).toBe(202);
    expect(await deleted.json()).toMatchObject({ id: tenantId, status: "deleting", deletion: { sessionsTotal: sessions.length, sessionsDeleted: 0 } });

    expect((await call("/v1/sessions", { token: key })).status).toBe(401);
    expect((await call(`${sessionPath}/lanes/main/snapshot`, { token })).status).toBe(401);
    expect((await call("/v1/sessions", { body: { id: "tdel_late" }, token: key })).status).toBe(401);
    expect((await socket.closed()).code).toBe(1008);
    const newKey = await admin(`/tenants/${tenantId}/keys`, "POST", { name: "late" });
    expect(newKey.status).toBe(409);
    expect(await newKey.json()).toMatchObject({ error: { code: "TenantDeleting" } });
    expect((await admin(`/tenants/${tenantId}/quotas`, "PATCH", { requestsPerMinute: 10 })).status).toBe(409);
    expect((await allTenants()).find((tenant) => tenant.id === tenantId)).toMatchObject({ status: "deleting" });
    // A repeat answers the same deletion.
    expect((await admin(`/tenants/${tenantId}`, "DELETE")).status).toBe(202);

    // Bounded per tick: every session's shard refuses its removal, so each tick deletes its batch's objects and moves
    // the batch to the queue's back, one place each (session-deletions.ts postpone); a batch that deleted nothing is
    // retried 10 s later. How many ticks ran before the check is the machine's business (a loaded one may run a second),
    // so the check counts them: at a moment when no tick is half done (the objects gone are exactly the sessions
    // moved back), every tick moved exactly one full batch, and nothing is gone that no tick tried.
    const gone = async () => (await Promise.all(sessions.map((sid) => holdsStorage(tenantId, sid)))).filter((holds) => !holds).length;
    const queue = () =>
      runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) =>
        state.storage.sql
          .exec<{ moved: number; places: number }>(
            // Queued at the deletion's start; each move goes one place past the queue's last.
            "SELECT count(*) FILTER (WHERE queued_at > t.deleting_at) AS moved, max(queued_at) - t.deleting_at AS places FROM session_deletions, tenant t",
          )
          .one(),
      );
    const settled = await eventually(async () => {
      const before = await queue();
      const objectsGone = await gone();
      const after = await queue();
      return before.moved > 0 && before.places === after.places && objectsGone === before.moved ? { places: before.places, objectsGone } : undefined;
    }, "a tick's batch of session objects deleted", 60_000);
    expect(settled.places % DELETIONS_PER_TICK).toBe(0);
    expect(settled.objectsGone).toBe(Math.min(sessions.length, settled.places));
    expect(await detail(tenantId)).toMatchObject({ status: 200, body: { status: "deleting", deletion: { sessionsDeleted: 0, sessionsRemaining: sessions.length } } });

    // The tenant's object dies here (its memory goes; its queue and alarm do not).
    await evictDurableObject(env.TENANTS.getByName(tenantId));
    // Healed: the queue resumes where it stopped. The grace left for requests that presented the
    // key just before (data-lifecycle.ts) is moved into the past: none is in flight here.
    await blockRemovals(tenantId, sessions, false);
    const tenant = env.TENANTS.getByName(tenantId);
    await runInDurableObject(tenant, (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE tenant SET deleting_at = deleting_at - 60000");
    });
    // Each tick arms the next: run them now rather than wait for the retry's 10 s.
    await eventually(async () => {
      await runDurableObjectAlarm(tenant);
      return (await detail(tenantId)).status === 404 ? true : undefined;
    }, "the tenant's deletion to complete");
    expect((await detail(tenantId)).status).toBe(404);
    for (const sid of sessions) expect(await holdsStorage(tenantId, sid)).toBe(false);
    const tenantTables = await runInDurableObject(tenant, (_instance: TenantObject, state) =>
      state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\'").toArray().length,
    );
    expect(tenantTables).toBe(0);

    expect((await admin(`/tenants/${tenantId}`, "DELETE")).status).toBe(404);
    const again = await admin("/tenants", "POST", { id: tenantId });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ error: { code: "TenantExists" } });
    expect((await allTenants()).some((item) => item.id === tenantId)).toBe(false);
  });

  it("answers 404 for a tenant that never existed, and leaves other tenants alone", async () => {
    const other = await newTenant("tdel_other");
    expect((await admin("/tenants/tdel_nobody", "DELETE")).status).toBe(404);
    expect((await admin("/tenants/tdel_nobody")).status).toBe(404);
    expect(await (await admin(`/tenants/${other.tenantId}`)).json()).toMatchObject({ id: other.tenantId, status: "active" });
    expect((await call("/v1/sessions", { token: other.key })).status).toBe(200);
  });
});
