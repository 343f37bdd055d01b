import { describe, expect, it } from "vitest";
import { AI_SDK_MAX_MESSAGES, AI_SDK_MAX_PARTS } from "../../schema/ai-sdk.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// the OpenAPI description of POST …/lanes/{lane}/ai-sdk documents
// "at most AI_SDK_MAX_MESSAGES messages", and schema/ai-sdk.ts bounds a message's parts by
// AI_SDK_MAX_PARTS, but no test sends one past either bound (no test file names them). Both must
// be a 400 ValidationFailed naming the field, with nothing run on the lane; at the bound the
// request is taken.

const user = (id: string, text = "") => ({ id, role: "user", parts: text ? [{ type: "text", text }] : [] });

describe("POST …/ai-sdk bounds", () => {
  it(`more than ${AI_SDK_MAX_MESSAGES} messages, or a message of more than ${AI_SDK_MAX_PARTS} parts, is 400 ValidationFailed; nothing runs`, async () => {
    const setup = await laneSetup("aisdk_bounds");
    const history = Array.from({ length: AI_SDK_MAX_MESSAGES }, (_, i) => user(`h${i}`));
    const tooMany = await call(`${setup.lanePath}/ai-sdk`, { body: { id: "c", messages: [...history, user("newest", "hi")] }, token: setup.key });
    expect(tooMany.status).toBe(400);
    expect(await tooMany.json()).toMatchObject({ error: { code: "ValidationFailed", message: expect.stringContaining("messages") } });
    const parts = Array.from({ length: AI_SDK_MAX_PARTS + 1 }, () => ({ type: "text", text: "x" }));
    const tooManyParts = await call(`${setup.lanePath}/ai-sdk`, { body: { id: "c", messages: [{ id: "m", role: "user", parts }] }, token: setup.key });
    expect(tooManyParts.status).toBe(400);
    expect(await tooManyParts.json()).toMatchObject({ error: { code: "ValidationFailed", message: expect.stringContaining("parts") } });
    const messages = await call(`${setup.lanePath}/ai-sdk/messages`, { token: setup.key });
    expect(await messages.json()).toEqual([]);
    // At the bounds the request is taken (the newest message is the prompt).
    const atBound = await call(`${setup.lanePath}/ai-sdk`, { body: { id: "c", messages: [...history.slice(1), { id: "newest", role: "user", parts: parts.slice(1) }] }, token: setup.key });
    expect(atBound.status).toBe(200);
    expect(await atBound.text()).toContain("data: [DONE]");
  });
});
