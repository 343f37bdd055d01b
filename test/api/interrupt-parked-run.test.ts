import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { parkedOnClientTool } from "./tool-api-helpers.ts";

// `ifBusy: "interrupt"` commits the abort marker of the current operation and puts the new run
// first in line (busy-prompts.ts); the aborted operation's settlement starts the new run. An
// operation resting in a durable wait (a client tool call, a suspended deferred response, a
// retry's backoff) has no live pass to reconcile it, so the marker's commit starts one itself
// (abort.ts): the interrupting run must start without anyone else driving the lane.

describe("interrupt of an operation resting in a durable wait", () => {
  it("POST …/prompt ifBusy interrupt on a run parked for a client tool answers the interrupting run's record within its wait", async () => {
    const { setup, operationId } = await parkedOnClientTool("rvi_prompt", "interrupting answer");
    const answered = await call(`${setup.lanePath}/prompt`, { body: { prompt: "stop and do this", ifBusy: "interrupt", wait: 8 }, token: setup.key });
    const body = await answered.json<{ status?: string; interrupted?: { operationId: string } }>();
    // The interrupted run must be reconciled (aborted) and the interrupting run then run to its end.
    expect(answered.status).toBe(200);
    expect(body).toMatchObject({ status: "completed", interrupted: { operationId } });
  });

  it("POST …/operations ifBusy interrupt: the interrupted operation ends aborted without anyone else driving it", async () => {
    const { setup, operationId } = await parkedOnClientTool("rvi_ops", "interrupting answer");
    const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "stop and do this", ifBusy: "interrupt" }, token: setup.key });
    expect(accepted.status).toBe(202);
    const { operationId: next } = await accepted.json<{ operationId: string }>();
    // Waiting on the pending run does not drive the operation ahead of it (awaitOperation waits for its start).
    const waited = await (await call(`${setup.lanePath}/operations/${next}?wait=8`, { token: setup.key })).json<{ state: string }>();
    const first = await (await call(`${setup.lanePath}/operations/${operationId}`, { token: setup.key })).json<{ state: string; status?: string; result?: { status: string } }>();
    expect(first).toMatchObject({ state: "settled", result: { status: "aborted" } });
    expect(waited.state).toBe("settled");
  });
});
