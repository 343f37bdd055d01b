import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { FORWARD_SAFETY_NET_MS } from "../../durable-objects/session/due-work/settlement-outbox.ts";
import { call } from "./helpers.ts";
import { blockSessionRows, indexed, suspendedRun } from "./deferred-helpers.ts";
import { objectOf } from "./session-helpers.ts";
import { eventually } from "./webhooks-helpers.ts";

// Issue 30 item 5 (ARCHITECTURE D8): a run that settles or is aborted leaves its DeferredIndex
// shard in the same logical step, through the outbox-and-forward path that registered it, with
// no sweep involved; a forward that fails and dies with the object is repeated by its alarm.

type Run = Awaited<ReturnType<typeof suspendedRun>>;

const registered = (run: Run) => eventually(async () => ((await indexed(run.shard, run.operationId)) ? true : undefined), "the registration");
const removed = (run: Run) => eventually(async () => ((await indexed(run.shard, run.operationId)) ? undefined : true), "the row to leave the index", 10_000);

type RegistrationRow = { operation_id: string; forward_at: number };

function registrationRows(run: Run): Promise<RegistrationRow[]> {
  return runInDurableObject(objectOf(run.tenantId, run.sid), (_instance: SessionObject, state) =>
    state.storage.sql.exec<RegistrationRow>("SELECT operation_id, forward_at FROM deferred_registrations").toArray(),
  );
}

describe("issue 30 item 5: a settled or aborted run leaves the DeferredIndex", () => {
  it("a run resumed by its client and settled is removed from its shard without any sweep", async () => {
    const run = await suspendedRun("dixsettle", { text: "fetched by the client" });
    await registered(run);
    const resumed = await call(`${run.lanePath}/operations/${run.operationId}/resume?wait=30`, { method: "POST", token: run.key });
    expect(await resumed.json()).toMatchObject({ state: "settled", result: { status: "completed" } });
    await removed(run);
  });

  it("an aborted suspended run is removed from its shard without any sweep", async () => {
    const run = await suspendedRun("dixabort");
    await registered(run);
    const aborted = await call(`${run.lanePath}/abort?wait=10`, { method: "POST", token: run.key });
    expect(await aborted.json()).toMatchObject({ operationId: run.operationId, record: { status: "aborted" } });
    await removed(run);
  });

  it("a removal whose forward failed and died with the object is repeated by the session's alarm", async () => {
    const run = await suspendedRun("dixcrash");
    await registered(run);
    await blockSessionRows(run.shard, `${run.tenantId}:${run.sid}`, true);
    const aborted = await call(`${run.lanePath}/abort?wait=10`, { method: "POST", token: run.key });
    expect(await aborted.json()).toMatchObject({ record: { status: "aborted" } });
    // The live forward failed: the session keeps the removal, postponed past its safety net, with its alarm.
    const [row] = await eventually(async () => {
      const rows = await registrationRows(run);
      return rows[0] && rows[0].forward_at > Date.now() + FORWARD_SAFETY_NET_MS ? rows : undefined;
    }, "the failed forward to postpone its row");
    expect(row?.operation_id).toBe(run.operationId);
    await blockSessionRows(run.shard, `${run.tenantId}:${run.sid}`, false);
    expect(await indexed(run.shard, run.operationId)).toBe(true);

    // Memory is dropped; the row and its alarm are not.
    await evictDurableObject(objectOf(run.tenantId, run.sid));
    const now = Date.now();
    await runInDurableObject(objectOf(run.tenantId, run.sid), (_instance: SessionObject, state) => {
      state.storage.sql.exec("UPDATE deferred_registrations SET forward_at = ?", now);
    });
    expect(await runDurableObjectAlarm(objectOf(run.tenantId, run.sid))).toBe(true);
    expect(await indexed(run.shard, run.operationId)).toBe(false);
    expect(await registrationRows(run)).toEqual([]);
  });
});
