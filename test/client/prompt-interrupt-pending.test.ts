import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient } from "../../client/index.ts";
import { laneSetup, slowStep, useScript } from "../api/lane-helpers.ts";

// `client.prompt(…, { ifBusy: "interrupt" })` aborts the running operation, which hands back the
// steer and follow-up messages it drained: the answer is this run's answer plus `interrupted`
// (docs/api-lanes.md "Prompts while busy"). When the wait ran out before the new run settled, the
// 202 body (and so the SDK's `pending` outcome) lacked it, and the drained messages were lost.

describe("an interrupting prompt whose wait runs out", { timeout: 60_000 }, () => {
  it("answers pending with the operation it interrupted and the steer and follow-up it drained", async () => {
    const setup = await laneSetup("rv_interrupt");
    await useScript(setup, [slowStep(100), slowStep(100)]);
    const client = createClient({ baseUrl: "http://api.test/", key: setup.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const running = await client.operations.accept(setup.sid, "main", { kind: "prompt", prompt: "first" });
    await client.queue.steer(setup.sid, "main", "steer me");
    await client.queue.followUp(setup.sid, "main", "follow me");

    // The new run streams for seconds: a short wait runs out before it settles.
    const outcome = await client.prompt(setup.sid, "main", "interrupt now", { ifBusy: "interrupt", wait: 0.2 });
    expect(outcome.state).toBe("pending");
    expect(outcome).toMatchObject({
      interrupted: {
        operationId: running.operationId,
        steer: [expect.objectContaining({ role: "user", content: "steer me" })],
        followUp: [expect.objectContaining({ role: "user", content: "follow me" })],
      },
    });
  });
});
