import { describe, expect, it } from "vitest";
import { pageMessages, send, textOf, userMessage } from "./ai-sdk-helpers.ts";
import { call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";

// `trigger: "regenerate-message"` moves the lane back before the page's newest user message and
// prompts it again (docs/ai-sdk.md). The move starts no run of its own (session-structural.ts
// `navigateAlone`): input queued for the lane's next run goes with the regenerated prompt, so the
// new answer is the only one.

describe("regenerate() with input queued on the lane", { timeout: 60_000 }, () => {
  it("makes one new answer: the regenerated one (no separate continuation run)", async () => {
    const setup = await laneSetup("aisrq");
    await useScript(setup, [{ text: "first try" }, { text: "second try" }, { text: "third try" }]);
    const question = userMessage("a poem");
    expect(textOf(await send(setup, [question]))).toBe("first try");
    expect((await call(`${setup.lanePath}/queue`, { body: { kind: "nextRun", message: "and keep it short" }, token: setup.key })).status).toBe(201);
    const again = await send(setup, [question], { trigger: "regenerate-message" });
    const page = await pageMessages(setup);
    const answers = page.filter((message) => message.role === "assistant").map(textOf);
    expect(answers).toEqual([textOf(again)]);
    // The queued item went with that prompt: nothing is left queued.
    const snapshot = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: { queues: unknown[] } }>();
    expect(snapshot.snapshot.queues).toEqual([]);
  });
});
