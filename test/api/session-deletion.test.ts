import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { shardOf } from "../../durable-objects/session/due-work/deferred-registrations.ts";
import { DELETIONS_PER_TICK } from "../../durable-objects/tenant/data-lifecycle.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { call, newTenant } from "./helpers.ts";
import { expectError } from "./session-helpers.ts";
import { blockSessionRows, indexed, suspendedRun } from "./deferred-helpers.ts";
import { eventually } from "./webhooks-helpers.ts";

// Issue 35 item 3 (API.md "Data lifecycle"): a session's deletion removes its rows elsewhere too.

describe("issue 35: DELETE /v1/sessions/{sid} removes the session's DeferredIndex rows", () => {
  it("a deleted session's suspended run leaves its shard before the DELETE answers", async () => {
    const run = await suspendedRun("deldix");
    await eventually(async () => ((await indexed(run.shard, run.operationId)) ? true : undefined), "the registration");
    const deleted = await call(`/v1/sessions/${run.sid}`, { method: "DELETE", token: run.key });
    expect(deleted.status).toBe(204);
    expect(await indexed(run.shard, run.operationId)).toBe(false);
    // A retry (after a partial failure, say) is still safe: 404, nothing left.
    expect((await call(`/v1/sessions/${run.sid}`, { method: "DELETE", token: run.key })).status).toBe(404);
  });
});

type Listing = { items: { id: string }[] };

async function createSession(key: string, id: string, metadata: Record<string, string>): Promise<void> {
  const created = await call("/v1/sessions", { body: { id, metadata }, token: key });
  expect(created.status).toBe(201);
}

async function listed(key: string, query = ""): Promise<string[]> {
  const response = await call(`/v1/sessions?limit=100${query}`, { token: key });
  expect(response.status).toBe(200);
  return (await response.json<Listing>()).items.map((item) => item.id).sort();
}

describe("issue 35: DELETE /v1/sessions?metadata.<key>=<value>", { timeout: 30_000 }, () => {
  it("deletes in the background the sessions holding every pair, hides them from listings at once, and leaves the others", async () => {
    const { tenantId, key } = await newTenant("delmeta");
    await createSession(key, "alice_1", { user: "alice", plan: "pro" });
    await createSession(key, "alice_2", { user: "alice", plan: "pro" });
    await createSession(key, "alice_free", { user: "alice", plan: "free" });
    await createSession(key, "bob_1", { user: "bob", plan: "pro" });

    const answer = await call("/v1/sessions?metadata.user=alice&metadata.plan=pro", { method: "DELETE", token: key });
    expect(answer.status).toBe(202);
    expect(await answer.json()).toEqual({ matched: 2 });
    // Queued sessions leave listings and searches at once.
    expect(await listed(key)).toEqual(["alice_free", "bob_1"]);
    expect(await listed(key, "&metadata.user=alice")).toEqual(["alice_free"]);

    // The tenant's alarm deletes them (it may already have run: running it again does nothing more).
    await runDurableObjectAlarm(env.TENANTS.getByName(tenantId));
    await eventually(async () => ((await call("/v1/sessions/alice_1", { token: key })).status === 404 ? true : undefined), "alice_1 deleted");
    expect((await call("/v1/sessions/alice_2", { token: key })).status).toBe(404);
    expect((await call("/v1/sessions/alice_free", { token: key })).status).toBe(200);
    expect((await call("/v1/sessions/bob_1", { token: key })).status).toBe(200);
    expect(await listed(key)).toEqual(["alice_free", "bob_1"]);
    // A repeat matches nothing more.
    expect(await (await call("/v1/sessions?metadata.user=alice&metadata.plan=pro", { method: "DELETE", token: key })).json()).toEqual({ matched: 0 });
  });

  it("needs at least one filter, and checks each as a listing does", async () => {
    const { key } = await newTenant("delmeta_bad");
    await createSession(key, "kept", { user: "carol" });
    await expectError(await call("/v1/sessions", { method: "DELETE", token: key }), 400, "ValidationFailed");
    await expectError(await call("/v1/sessions?limit=5", { method: "DELETE", token: key }), 400, "ValidationFailed");
    await expectError(await call(`/v1/sessions?metadata.${"k".repeat(65)}=x`, { method: "DELETE", token: key }), 400, "ValidationFailed");
    expect(await listed(key)).toEqual(["kept"]);
  });

  it("never reaches another tenant's sessions", async () => {
    const mine = await newTenant("delmeta_mine");
    const theirs = await newTenant("delmeta_theirs");
    await createSession(mine.key, "shared_id", { user: "dave" });
    const answer = await call("/v1/sessions?metadata.user=dave", { method: "DELETE", token: theirs.key });
    expect(await answer.json()).toEqual({ matched: 0 });
    await runDurableObjectAlarm(env.TENANTS.getByName(theirs.tenantId));
    expect((await call("/v1/sessions/shared_id", { token: mine.key })).status).toBe(200);
    expect(await listed(mine.key)).toEqual(["shared_id"]);
  });
});

describe("issue 35: background deletions go on past sessions that cannot be deleted yet", { timeout: 60_000 }, () => {
  it("a batch of unreachable sessions at the head of the queue is moved to its back; the others are deleted", async () => {
    const { tenantId, key } = await newTenant("delstuck");
    // DELETIONS_PER_TICK sessions whose shard refuses, queued (by id order) before five others.
    const brokenShard = shardOf(`${tenantId}:a_0`);
    const stuck: string[] = [];
    for (let index = 0; stuck.length < DELETIONS_PER_TICK; index++) if (shardOf(`${tenantId}:a_${index}`) === brokenShard) stuck.push(`a_${index}`);
    const others: string[] = [];
    for (let index = 0; others.length < 5; index++) if (shardOf(`${tenantId}:z_${index}`) !== brokenShard) others.push(`z_${index}`);
    for (const sid of [...stuck, ...others]) await createSession(key, sid, { batch: "all" });
    for (const sid of stuck) await blockSessionRows(env.DEFERRED_INDEX.getByName(brokenShard), `${tenantId}:${sid}`, true);
    expect(await (await call("/v1/sessions?metadata.batch=all", { method: "DELETE", token: key })).json()).toEqual({ matched: stuck.length + others.length });
    const tenant = env.TENANTS.getByName(tenantId);
    // The first tick finds its whole batch unreachable and arms a retry; ticks run now (each
    // alarm the previous one armed) reach the sessions queued behind them, whose turn would
    // never come if the unreachable ones stayed at the head.
    await eventually(async () => {
      await runDurableObjectAlarm(tenant);
      return (await status(key, others[0] ?? "")) === 404 ? true : undefined;
    }, "the sessions queued behind the unreachable ones to be deleted");
    for (const sid of others) expect(await status(key, sid)).toBe(404);
    // The unreachable ones stay queued (hidden from listings), to be tried again.
    expect(await listed(key)).toEqual([]);
    const queued = await runInDurableObject(tenant, (_instance: TenantObject, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM session_deletions").one().n);
    expect(queued).toBe(stuck.length);
    // Healed, so that no other file meets these sessions' refusals in the shard it shares.
    for (const sid of stuck) await blockSessionRows(env.DEFERRED_INDEX.getByName(brokenShard), `${tenantId}:${sid}`, false);
  });
});

const status = async (key: string, sid: string) => (await call(`/v1/sessions/${sid}`, { token: key })).status;
