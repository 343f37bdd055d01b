import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { folded, pageMessages, send, textOf, transportOf, userMessage } from "./ai-sdk-helpers.ts";
import { adminToken, call } from "./helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";
import { prompt, settle } from "./tool-api-helpers.ts";

// docs/ai-sdk.md "What a request does": the AI SDK's `regenerate()` (also its retry after an
// error) drops the answer and sends the page's messages up to and including the user message it
// wants answered again, with `trigger: "regenerate-message"`. The route answers that message: it
// moved the lane back before the lane's own last user message whatever the page sent (answering
// another client's prompt again, or only the part of a steered answer after the steer). A message
// sent again opens nothing, so it needs no free slot; a regenerate gives its navigation's slot back
// before it prompts (at a quota of one it was 429 after the lane had moved). A user message holds
// at most a prompt's 64 images.

async function untilNoneOpen(tenantId: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if ((await env.TENANTS.getByName(tenantId).openOperationCount()) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("operations stayed open");
}

const oneSlot = async (tenantId: string) => expect((await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 1 }, token: adminToken() })).status).toBe(200);

describe("regenerate() answers the page's newest user message", () => {
  it("after a send that was refused, answers that message instead of re-asking the lane's previous one", async () => {
    const setup = await laneSetup("aisdk_regen_refused");
    const slow = slowStep(20);
    await useScript(setup, [{ text: "Answer one." }, slow, { text: "Answer two." }, { text: "unexpected" }]);
    const first = userMessage("Question one");
    const answer = await send(setup, [first]);
    expect(textOf(answer)).toBe("Answer one.");
    // Another client prompts the lane; the page's next message is refused 409 while that runs.
    const other = await prompt(setup);
    const second = userMessage("Question two");
    await expect(
      transportOf(setup).sendMessages({ chatId: setup.sid, messages: [first, answer, second], abortSignal: undefined, trigger: "submit-message", messageId: undefined }),
    ).rejects.toThrow();
    expect((await settle(setup, other)).status).toBe("completed");
    // The user presses "retry": useChat's regenerate() with the refused user message last.
    const retried = await send(setup, [first, answer, second], { trigger: "regenerate-message" });
    expect(textOf(retried)).toBe("Answer two.");
    const page = await pageMessages(setup);
    expect(page.map((message) => [message.role, textOf(message)])).toEqual([
      ["user", "Question one"],
      ["assistant", "Answer one."],
      ["user", "go"],
      ["assistant", slow.text],
      ["user", "Question two"],
      ["assistant", "Answer two."],
    ]);
  });

  it("regenerates the whole answer of a steered run (the page's last assistant message), not just the part after the steer", async () => {
    const setup = await laneSetup("aisdk_regen_steer");
    await useScript(setup, [slowStep(30), { text: "steered answer" }, { text: "a fresh answer" }]);
    const question = userMessage("go");
    const streaming = transportOf(setup).sendMessages({ chatId: setup.sid, messages: [question], abortSignal: undefined, trigger: "submit-message", messageId: undefined });
    await untilAt(setup, "assistant.effect_pending");
    expect((await call(`${setup.lanePath}/queue`, { body: { kind: "steer", message: "shorter please" }, token: setup.key })).status).toBe(201);
    const steered = await folded(await streaming);
    expect(steered.parts.some((part) => part.type === "steering-message")).toBe(true);
    const again = await send(setup, [question], { trigger: "regenerate-message" });
    expect(textOf(again)).toBe("a fresh answer");
    // The lane's conversation is now what the page shows.
    expect((await pageMessages(setup)).map((message) => [message.role, textOf(message)])).toEqual([
      ["user", "go"],
      ["assistant", "a fresh answer"],
    ]);
  });

  it("at a quota of one open operation, navigates and prompts again (the navigation's slot is free before the prompt)", async () => {
    const setup = await laneSetup("aisdk_regen_quota");
    await oneSlot(setup.tenantId);
    await useScript(setup, [{ text: "first try" }, { text: "second try" }]);
    const question = userMessage("a poem");
    expect(textOf(await send(setup, [question]))).toBe("first try");
    await untilNoneOpen(setup.tenantId);
    const response = await call(`${setup.lanePath}/ai-sdk`, { body: { id: setup.sid, messages: [question], trigger: "regenerate-message" }, token: setup.key });
    const body = await response.text();
    expect(response.status, body).toBe(200);
    expect(body).toContain("second try");
    expect((await pageMessages(setup)).map((message) => [message.role, textOf(message)])).toEqual([
      ["user", "a poem"],
      ["assistant", "second try"],
    ]);
  });
});

describe("the same message sent again while its run holds the tenant's last slot", () => {
  it("follows the run it started (not 429 RateLimited)", async () => {
    const setup = await laneSetup("aisdk_repeat_quota");
    await oneSlot(setup.tenantId);
    const slow = slowStep(30);
    await useScript(setup, [slow, { text: "never" }]);
    const transport = transportOf(setup);
    const question = userMessage("tell me slowly");
    const sendIt = () => transport.sendMessages({ chatId: setup.sid, messages: [question], abortSignal: undefined, trigger: "submit-message", messageId: undefined });
    const first = await sendIt();
    await untilAt(setup, "assistant.effect_pending");
    // A second tab (or the page's retry) sends the same message while the run is live.
    const again = await sendIt();
    expect(textOf(await folded(again))).toBe(slow.text);
    expect(textOf(await folded(first))).toBe(slow.text);
  });
});

describe("images in one AI SDK message", () => {
  const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

  it("refuses more than a prompt's 64 images, as POST …/prompt does, and writes nothing", async () => {
    const setup = await laneSetup("aisdk_images");
    await useScript(setup, [{ text: "seen" }, { text: "seen" }]);
    const images = Array.from({ length: 65 }, () => ({ type: "image", mimeType: "image/png", data: PIXEL }));
    expect((await call(`${setup.lanePath}/prompt`, { body: { prompt: "look", images }, token: setup.key })).status).toBe(400);
    const parts = [{ type: "text", text: "look" }, ...images.map(() => ({ type: "file", mediaType: "image/png", url: `data:image/png;base64,${PIXEL}` }))];
    const chat = await call(`${setup.lanePath}/ai-sdk`, { body: { id: setup.sid, messages: [{ id: "m-img", role: "user", parts }], trigger: "submit-message" }, token: setup.key });
    const text = await chat.text();
    expect(chat.status, text.slice(0, 300)).toBe(400);
    expect(JSON.parse(text)).toMatchObject({ error: { code: "ValidationFailed" } });
    expect(await pageMessages(setup)).toEqual([]);
  });
});
