import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { Entry } from "../../schema/entries.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { checkInvariants } from "../runtime/invariants.ts";
import { call } from "./helpers.ts";
import { laneSetup, slowStep, useScript } from "./lane-helpers.ts";
import { objectOf } from "./session-helpers.ts";

// docs/api-lanes.md "Compaction" and "Navigation": unless it was aborted, a convenience's
// operation is followed by the run that takes the lane's queued input, "answered either way". The
// run was started only by the request whose wait saw the settlement: once the wait ran out (202
// `{ operationId }`), the input stayed queued on an idle lane until some other prompt came. Now a
// waiter in the object starts it at the settlement, and a restarted object makes the waiter again.

type Setup = Awaited<ReturnType<typeof laneSetup>>;
type Lane = { current: unknown; lastOperationId: string | null; queues: { kind: string }[] };

async function twoTurnsThenSlowSummary(prefix: string): Promise<Setup & { firstTurn: string }> {
  const setup = await laneSetup(prefix);
  const settings = { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } };
  expect((await call(`/v1/sessions/${setup.sid}`, { method: "PATCH", body: { settings }, token: setup.key })).status).toBe(200);
  // Two quick turns, then a summary slow enough to outlast a one-second wait, then spares for the
  // summary's second step and the continuation.
  await useScript(setup, [{ text: "one back" }, { text: "two back" }, slowStep(), { text: "spare" }, { text: "the follow-up's answer" }, { text: "spare" }]);
  const first = await (await call(`${setup.lanePath}/prompt`, { body: { prompt: "one" }, token: setup.key })).json<{ tipId: string }>();
  expect((await call(`${setup.lanePath}/prompt`, { body: { prompt: "two" }, token: setup.key })).status).toBe(200);
  return { ...setup, firstTurn: first.tipId };
}

async function queueFollowUp(setup: Setup): Promise<void> {
  expect((await call(`${setup.lanePath}/queue`, { body: { kind: "followUp", message: "and then?" }, token: setup.key })).status).toBe(201);
}

/** The lane ends idle with nothing queued, its last operation a run after `structural`, which took the follow-up. */
async function expectContinued(setup: Setup, structural: string): Promise<void> {
  await expect
    .poll(async () => {
      const lane = await (await call(setup.lanePath, { token: setup.key })).json<Lane>();
      return { idle: lane.current === null, queued: lane.queues.length, continued: lane.lastOperationId !== null && lane.lastOperationId !== structural };
    })
    .toEqual({ idle: true, queued: 0, continued: true });
  const { snapshot } = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: LaneSnapshot }>();
  const prompts = snapshot.transcript.flatMap((entry: Entry) => (entry.type === "message" && entry.message.role === "user" && typeof entry.message.content === "string" ? [entry.message.content] : []));
  expect(prompts.filter((prompt) => prompt === "and then?")).toHaveLength(1);
  const violations = await runInDurableObject(objectOf(setup.tenantId, setup.sid), (instance: SessionObject) => checkInvariants(instance.session()));
  expect(violations).toEqual([]);
}

describe("a structural convenience's continuation once its wait ran out", { timeout: 60_000 }, () => {
  it("POST …/compact: the queued follow-up is answered by a run after the compaction settles", async () => {
    const setup = await twoTurnsThenSlowSummary("scl_c");
    await queueFollowUp(setup);
    const compact = await call(`${setup.lanePath}/compact`, { body: { wait: 1 }, token: setup.key });
    expect(compact.status).toBe(202);
    const { operationId } = await compact.json<{ operationId: string }>();
    const settled = await (await call(`${setup.lanePath}/operations/${operationId}?wait=20`, { token: setup.key })).json();
    expect(settled).toMatchObject({ state: "settled", result: { kind: "compaction", status: "completed" } });
    await expectContinued(setup, operationId);
  });

  it("POST …/navigate with a summary: the same", async () => {
    const setup = await twoTurnsThenSlowSummary("scl_n");
    await queueFollowUp(setup);
    const navigate = await call(`${setup.lanePath}/navigate`, { body: { targetId: setup.firstTurn, summarize: true, wait: 1 }, token: setup.key });
    expect(navigate.status).toBe(202);
    const { operationId } = await navigate.json<{ operationId: string }>();
    const settled = await (await call(`${setup.lanePath}/operations/${operationId}?wait=20`, { token: setup.key })).json();
    expect(settled).toMatchObject({ state: "settled", result: { kind: "navigation", status: "completed" } });
    await expectContinued(setup, operationId);
  });

  it("a continuation owed when the object died is decided by the restarted object: while the compaction runs, or after it settled", async () => {
    for (const settledFirst of [false, true]) {
      const setup = await twoTurnsThenSlowSummary(settledFirst ? "scl_ks" : "scl_kr");
      await queueFollowUp(setup);
      // What a convenience leaves when the object dies before any waiter exists: the operation
      // accepted, its continuation marked (the primitive, so that no waiter of this instance exists).
      const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "compaction" }, token: setup.key });
      const { operationId } = await accepted.json<{ operationId: string }>();
      if (settledFirst) await call(`${setup.lanePath}/operations/${operationId}?wait=20`, { token: setup.key });
      await runInDurableObject(objectOf(setup.tenantId, setup.sid), (_instance: SessionObject, state) => {
        state.storage.kv.put(`structural.continue/main/${operationId}`, 1);
      });
      await evictDurableObject(objectOf(setup.tenantId, setup.sid));
      // The restarted object arms its alarm for what it owes; the alarm's harness makes the waiter.
      expect(await runDurableObjectAlarm(objectOf(setup.tenantId, setup.sid))).toBe(true);
      const settled = await (await call(`${setup.lanePath}/operations/${operationId}?wait=30`, { token: setup.key })).json();
      expect(settled).toMatchObject({ state: "settled", result: { kind: "compaction", status: "completed" } });
      await expectContinued(setup, operationId);
      const owed = await runInDurableObject(objectOf(setup.tenantId, setup.sid), (_instance: SessionObject, state) => [...state.storage.kv.list({ prefix: "structural.continue/" })].length);
      expect(owed).toBe(0);
    }
  });

  it("an aborted compaction starts no continuation: the follow-up stays queued for the next prompt", async () => {
    const setup = await twoTurnsThenSlowSummary("scl_a");
    await queueFollowUp(setup);
    const compact = await call(`${setup.lanePath}/compact`, { body: { wait: 1 }, token: setup.key });
    const { operationId } = await compact.json<{ operationId: string }>();
    expect((await call(`${setup.lanePath}/abort?wait=10`, { method: "POST", token: setup.key })).status).toBe(200);
    const settled = await (await call(`${setup.lanePath}/operations/${operationId}?wait=20`, { token: setup.key })).json();
    expect(settled).toMatchObject({ state: "settled", result: { status: "aborted" } });
    const lane = await (await call(setup.lanePath, { token: setup.key })).json<Lane>();
    expect({ idle: lane.current === null, last: lane.lastOperationId }).toEqual({ idle: true, last: operationId });
  });
});
