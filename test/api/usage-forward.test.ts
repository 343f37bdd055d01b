import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { addUsage } from "../../harness/session/usage.ts";
import type { Usage } from "../../schema/usage.ts";
import { call } from "./helpers.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { execution, laneSetup, untilAt, useScript } from "./lane-helpers.ts";
import { activate, ARGS_SCHEMA, prompt, putTool } from "./tool-api-helpers.ts";
import { objectOf } from "./session-helpers.ts";
import { breakUsageMarks, eventually, failedForward, outboxRows, settledPrompt } from "./webhooks-helpers.ts";

// Issue 30 item 6c: the tenant's usage totals are exact. A session forwards every usage-ledger row
// at least once (with its settlements, and again after a failed or repeated forward), and the
// tenant applies each row once, by a per-session high-water mark of the ledger seq it applied.

const tenantUsage = async (key: string): Promise<Usage> => (await (await call("/v1/me", { token: key })).json<{ usage: Usage }>()).usage;
const sessionUsage = async (key: string, sessionPath: string): Promise<Usage> => (await (await call(`${sessionPath}/usage`, { token: key })).json<{ totals: Usage }>()).totals;

/** Waits until the tenant's totals are `expected` (they arrive after the commit, off the request's path). */
function tenantReaches(key: string, expected: Usage): Promise<Usage> {
  return eventually(async () => {
    const totals = await tenantUsage(key);
    return JSON.stringify(totals) === JSON.stringify(expected) ? totals : undefined;
  }, "the tenant's totals", 10_000);
}

/** Makes the session's outbox rows due now, so its alarm forwards them. */
async function dueNow(tenantId: string, sid: string): Promise<void> {
  const now = Date.now();
  await runInDurableObject(objectOf(tenantId, sid), (_instance: SessionObject, state) => {
    state.storage.sql.exec("UPDATE settlement_outbox SET forward_at = ?", now);
  });
}

/** The tenant's usage marks of one session (at most one row). */
function usageMarks(tenantId: string, sid: string): Promise<{ epoch: number; seq: number }[]> {
  return runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) =>
    state.storage.sql.exec<{ epoch: number; seq: number }>("SELECT epoch, seq FROM session_usage_marks WHERE session_id = ?", sid).toArray(),
  );
}

function usageRetryAt(tenantId: string, sid: string): Promise<number | null> {
  return runInDurableObject(objectOf(tenantId, sid), (_instance: SessionObject, state) => state.storage.sql.exec<{ retry_at: number | null }>("SELECT retry_at FROM usage_forward").one().retry_at);
}

describe("issue 30 item 6c: tenant usage totals stay exact", () => {
  it("usage whose forward failed reaches the tenant with the retried forward", async () => {
    const { setup } = await failedForward("usefail");
    const expected = await sessionUsage(setup.key, setup.sessionPath);
    expect(expected.totalTokens).toBeGreaterThan(0);
    expect(await tenantUsage(setup.key)).toMatchObject({ totalTokens: 0 });

    await evictDurableObject(objectOf(setup.tenantId, setup.sid));
    await dueNow(setup.tenantId, setup.sid);
    expect(await runDurableObjectAlarm(objectOf(setup.tenantId, setup.sid))).toBe(true);
    expect(await outboxRows(setup.tenantId, setup.sid)).toEqual([]);
    expect(await tenantUsage(setup.key)).toEqual(expected);
  });

  it("a forward repeated after its acknowledgment died with the object adds nothing twice", async () => {
    const setup = await laneSetup("userepeat");
    for (const prompt of ["one", "two"]) await settledPrompt(setup.key, setup.lanePath, prompt);
    const expected = await sessionUsage(setup.key, setup.sessionPath);
    await tenantReaches(setup.key, expected);
    // The turns' usage was acknowledged; its mark is stored a batch at a time, so an eviction
    // forgets it, and the alarm the turn armed tells the rows once more.
    await evictDurableObject(objectOf(setup.tenantId, setup.sid));
    expect(await runDurableObjectAlarm(objectOf(setup.tenantId, setup.sid))).toBe(true);
    expect(await outboxRows(setup.tenantId, setup.sid)).toEqual([]);
    expect(await tenantUsage(setup.key)).toEqual(expected);

    // Told again, directly: the same rows are applied once.
    const tenant = env.TENANTS.getByName(setup.tenantId);
    const createdAt = await runInDurableObject(objectOf(setup.tenantId, setup.sid), (instance: SessionObject) => instance.session().metadata.createdAt);
    const rows = (await (await call(`${setup.sessionPath}/usage`, { token: setup.key })).json<{ rows: { seq: number; usage: Usage }[] }>()).rows;
    await tenant.operationsSettled(setup.sid, [], { epoch: createdAt, rows: rows.map(({ seq, usage }) => ({ seq, usage })) });
    expect(await tenantUsage(setup.key)).toEqual(expected);
  });

  it("usage of a run that waits on a client (no settlement to carry it) is retried by the alarm after a failed forward", async () => {
    const setup = await laneSetup("useparked");
    expect((await putTool(setup, "ask_user", { kind: "client", description: "Asks the user", parameters: ARGS_SCHEMA })).status).toBe(201);
    await useScript(setup, [{ toolCalls: [{ name: "ask_user", arguments: { question: "ok?" } }] }, { text: "thanks" }]);
    await activate(setup, ["ask_user"]);
    await breakUsageMarks(setup.tenantId, true);
    await prompt(setup);
    await untilAt(setup, "tools");
    await eventually(async () => ((await usageRetryAt(setup.tenantId, setup.sid)) === null ? undefined : true), "the failed forward to arm its retry");
    await breakUsageMarks(setup.tenantId, false);
    const expected = await sessionUsage(setup.key, setup.sessionPath);
    expect(expected.totalTokens).toBeGreaterThan(0);

    await evictDurableObject(objectOf(setup.tenantId, setup.sid));
    const now = Date.now();
    await runInDurableObject(objectOf(setup.tenantId, setup.sid), (_instance: SessionObject, state) => {
      state.storage.sql.exec("UPDATE usage_forward SET retry_at = ?", now);
    });
    expect(await runDurableObjectAlarm(objectOf(setup.tenantId, setup.sid))).toBe(true);
    expect(await tenantUsage(setup.key)).toEqual(expected);
    // Told, the retry is disarmed with the alarm's end: nothing is left to bring the alarm back.
    expect(await usageRetryAt(setup.tenantId, setup.sid)).toBeNull();
    expect((await execution(setup)).current).toMatchObject({ at: "tools" });
  });

  it("a session deleted and created again under the same id has its usage counted too", async () => {
    const setup = await laneSetup("usereborn");
    await settledPrompt(setup.key, setup.lanePath, "first life, a longer prompt than the second");
    const first = await sessionUsage(setup.key, setup.sessionPath);
    await tenantReaches(setup.key, first);
    expect((await call(setup.sessionPath, { method: "DELETE", token: setup.key })).status).toBe(204);

    expect((await call("/v1/sessions", { body: { id: setup.sid }, token: setup.key })).status).toBe(201);
    expect((await call(setup.lanePath, { method: "PUT", token: setup.key })).status).toBe(201);
    await settledPrompt(setup.key, setup.lanePath, "second");
    const second = await sessionUsage(setup.key, setup.sessionPath);
    expect(second.totalTokens).toBeGreaterThan(0);
    await tenantReaches(setup.key, addUsage(first, second));
  });

  it("a deleted session's usage mark leaves with it, its usage kept in the totals: the tenant keeps no row for it", async () => {
    const setup = await laneSetup("usemarkgone");
    await settledPrompt(setup.key, setup.lanePath, "counted");
    await tenantReaches(setup.key, await sessionUsage(setup.key, setup.sessionPath));
    expect(await usageMarks(setup.tenantId, setup.sid)).toHaveLength(1);
    const counted = await tenantUsage(setup.key);
    expect((await call(setup.sessionPath, { method: "DELETE", token: setup.key })).status).toBe(204);
    expect(await usageMarks(setup.tenantId, setup.sid)).toEqual([]);
    // Its usage stays in the tenant's totals.
    expect(await tenantUsage(setup.key)).toEqual(counted);
  });
});
