import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient } from "../../client/index.ts";
import { slowStep, useScript, laneSetup } from "../api/lane-helpers.ts";

// The SDK's prompts while busy (spec "Prompt while busy") against the real app in workerd: a
// pending run through `operations.accept`, listed by `operations.pending`, and `prompt` with
// `ifBusy` answered by its own run, or as `queued` when handed to the running operation.

describe("client SDK: prompts while busy", { timeout: 30_000 }, () => {
  it("accepts a pending run, lists it, waits for an enqueued prompt's own answer, and hands a steer to the running run", async () => {
    const setup = await laneSetup("sdk_busy");
    await useScript(setup, [slowStep(), { text: "steered on" }, { text: "pending answer" }, { text: "enqueued answer" }]);
    const client = createClient({ baseUrl: "http://api.test/", key: setup.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const running = await client.operations.accept(setup.sid, "main", { kind: "prompt", prompt: "first" });
    const waiting = await client.operations.accept(setup.sid, "main", { kind: "prompt", prompt: "second", ifBusy: "enqueue" });
    expect(waiting).toMatchObject({ state: "pending", position: 1 });
    expect((await client.operations.pending(setup.sid, "main")).map((run) => run.operationId)).toEqual([waiting.operationId]);

    const steered = await client.prompt(setup.sid, "main", "go this way", { ifBusy: "steer" });
    expect(steered).toEqual({ state: "queued", operationId: running.operationId, entryId: expect.any(String), queued: "steer" });

    const enqueued = await client.prompt(setup.sid, "main", "third", { ifBusy: "enqueue", wait: 30 });
    if (enqueued.state !== "settled") throw new Error(`the enqueued prompt did not settle: ${enqueued.state}`);
    expect(enqueued.result.messages.at(-1)).toMatchObject({ role: "assistant", content: [{ type: "text", text: "enqueued answer" }] });
    expect(await client.operations.get(setup.sid, "main", waiting.operationId)).toMatchObject({ state: "settled", result: { status: "completed" } });
  });
});
