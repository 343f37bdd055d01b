import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { DeferredIndex } from "../../durable-objects/deferred-index/deferred-index.ts";
import { shardOf } from "../../durable-objects/session/due-work/deferred-registrations.ts";
import { uuidv7Ids } from "../../harness/session/ids.ts";
import { call, newTenant } from "./helpers.ts";
import { useScript } from "./lane-helpers.ts";
import { tick } from "./deferred-helpers.ts";

// The DeferredIndex keys a suspended run by its session and operation id: an operation id is only
// unique within its session (docs/api-lanes.md: "a UUIDv7 not used before in the session"). Keyed
// by the id alone, two sessions of one shard suspending a run under the same (client-chosen) id
// shared one row: the second registration took it over, the cron never resumed the first run
// (docs/api-lanes.md "Deferred runs"), and one session's settlement removed the other's row.

let counter = 0;

async function rows(shard: DurableObjectStub<DeferredIndex>, operationId: string): Promise<{ session: string }[]> {
  return runInDurableObject(shard, (_instance: DeferredIndex, state) =>
    state.storage.sql.exec<{ session: string }>("SELECT session FROM suspended_runs WHERE operation_id = ?", operationId).toArray(),
  );
}

async function settledStatus(lanePath: string, key: string, operationId: string): Promise<string | undefined> {
  const view = await (await call(`${lanePath}/operations/${operationId}?wait=5`, { token: key })).json<{ state: string; result?: { status: string } }>();
  return view.state === "settled" ? view.result?.status : view.state;
}

describe("deferred index keys", () => {
  it("two sessions suspending a run under the same operation id are both registered and both resumed by the cron", { timeout: 90_000 }, async () => {
    const tenant = await newTenant("defkeys");
    // Two session ids whose objects hash to the same DeferredIndex shard (8 shards: found at once).
    const first = `s_rvdk_${(counter++).toString(36)}_${Date.now().toString(36)}`;
    let second = "";
    for (let i = 0; ; i++) {
      second = `s_rvdk_b${i}_${Date.now().toString(36)}`;
      if (shardOf(`${tenant.tenantId}:${second}`) === shardOf(`${tenant.tenantId}:${first}`)) break;
    }
    const operationId = uuidv7Ids.next();
    const lanes: { lanePath: string }[] = [];
    for (const sid of [first, second]) {
      expect((await call("/v1/sessions", { body: { id: sid }, token: tenant.key })).status).toBe(201);
      expect((await call(`/v1/sessions/${sid}/lanes/main`, { method: "PUT", token: tenant.key })).status).toBe(201);
      const setup = { tenantId: tenant.tenantId, sid, key: tenant.key, lanePath: `/v1/sessions/${sid}/lanes/main` };
      await useScript(setup, [{ deferred: { ready: { text: `fetched for ${sid}` } } }]);
      const answer = await call(`${setup.lanePath}/prompt`, { body: { prompt: "later", wait: 30, operationId }, token: tenant.key });
      expect(answer.status).toBe(200);
      expect(await answer.json()).toMatchObject({ status: "suspended", operationId });
      lanes.push(setup);
    }
    const shard = env.DEFERRED_INDEX.getByName(shardOf(`${tenant.tenantId}:${first}`));
    // The second session's registration has reached the shard (forwarded after its suspending commit).
    await expect.poll(async () => (await rows(shard, operationId)).map((row) => row.session), { timeout: 15_000 }).toContain(`${tenant.tenantId}:${second}`);
    await tick();
    // The second session's run is resumed; the first one's was never resumed: it stays suspended
    // (its row now names the second session), whatever the number of ticks.
    await expect.poll(() => settledStatus(lanes[1]!.lanePath, tenant.key, operationId), { timeout: 20_000 }).toBe("completed");
    await tick();
    await expect.poll(() => settledStatus(lanes[0]!.lanePath, tenant.key, operationId), { timeout: 20_000 }).toBe("completed");
  });
});
