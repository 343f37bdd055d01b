import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { shardOf } from "../../durable-objects/session/due-work/deferred-registrations.ts";
import { indexed, tick } from "./deferred-helpers.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { call } from "./helpers.ts";
import { execution, laneSetup, untilAt, useScript } from "./lane-helpers.ts";
import { order, signalsReturn, waitsFor, type Wrapper } from "./race-helpers.ts";
import { ARGS_SCHEMA, activate, putTool } from "./tool-api-helpers.ts";

// The minute cron's deferred sweep asks a run's session about it (worker/deferred-sweep.ts), then
// reports to the shard. A run that is current but not in a deferred wait right then (waiting for a
// client tool between two deferred model turns) is answered "gone". If it suspends again and
// re-registers between that answer and the report, the fresh registration stands: every report,
// "gone" included, applies only to the row this sweep leased (deferred-index.ts `report`).

let restore: (() => Promise<void>) | undefined;
afterEach(async () => {
  await restore?.();
  restore = undefined;
});

/** Module flags (test and objects share the isolate, as race-helpers' points do). */
const flags = new Set<string>();
async function until(flag: string): Promise<void> {
  for (let i = 0; i < 3000 && !flags.has(flag); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  if (!flags.has(flag)) throw new Error(`${flag} never happened`);
}

describe("the deferred sweep's 'gone' report vs the run suspending again", () => {
  it("a run that suspends again while the sweep's 'gone' report is on its way stays registered (the next tick polls it)", { timeout: 90_000 }, async () => {
    const setup = await laneSetup("rr_gone");
    expect((await putTool(setup, "ask_user", { kind: "client", description: "Asks the user", parameters: ARGS_SCHEMA })).status).toBe(201);
    await activate(setup, ["ask_user"]);
    await useScript(setup, [
      { deferred: { ready: { toolCalls: [{ name: "ask_user", arguments: { question: "ok?" } }] } } },
      { deferred: { ready: { text: "finally" } } },
    ]);
    const session = `${setup.tenantId}:${setup.sid}`;
    const shard = env.DEFERRED_INDEX.getByName(shardOf(session));
    const sessionStub = env.SESSIONS.getByName(session);

    // Turn 1 suspends on its deferred response: registered with the shard.
    const answer = await (await call(`${setup.lanePath}/prompt`, { body: { prompt: "go", wait: 30 }, token: setup.key })).json<{ status: string; operationId: string }>();
    expect(answer.status).toBe("suspended");
    const { operationId } = answer;
    for (let i = 0; i < 400 && !(await indexed(shard, operationId)); i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(await indexed(shard, operationId)).toBe(true);

    // The client polls it: the response is ready and asks for a client tool. The run is current,
    // waiting for the client, and its shard row (due) is still there.
    expect((await call(`${setup.lanePath}/operations/${operationId}/resume?wait=0`, { method: "POST", token: setup.key })).status).toBeLessThan(300);
    await untilAt(setup, "tools");
    const toolCallId = await clientCall(setup);

    const mine = (wrapper: Wrapper): Wrapper => (run, args, points) => {
      const rows = args[0];
      return Array.isArray(rows) && rows.some((row: { session?: string }) => row.session === session) ? wrapper(run, args, points) : run();
    };
    const asked: Wrapper = async (run) => {
      const value = await run();
      flags.add(`asked:${session}`);
      return value;
    };
    ({ restore } = await order([
      { stub: sessionStub, methods: { sweepDeferred: asked } },
      { stub: shard, methods: { register: mine(signalsReturn("reregistered")), report: mine(waitsFor("reregistered")) } },
    ]));

    // The cron asks the session while the run waits for the client ("gone"); its report waits.
    const sweeping = tick();
    await until(`asked:${session}`);
    // The client answers: turn 2 suspends on its deferred response and registers again.
    expect((await call(`${setup.lanePath}/operations/${operationId}/tool-results/${toolCallId}`, { body: { content: [{ type: "text", text: "yes" }] }, token: setup.key })).status).toBe(202);
    await sweeping;
    await restore();
    restore = undefined;

    expect((await execution(setup)).current?.at).toBe("deferred.suspended");
    // The run is suspended again: its shard must hold it, or the cron never polls it.
    expect(await indexed(shard, operationId)).toBe(true);
  });
});

/** The waiting client call's id, from the lane snapshot. */
async function clientCall(setup: { key: string; lanePath: string }): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const snapshot = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: LaneSnapshot }>();
    const row = snapshot.snapshot.operation?.runningTools.find((candidate) => candidate.toolName === "ask_user");
    if (row) return row.toolCallId;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error("the client call never showed up in the snapshot");
}
