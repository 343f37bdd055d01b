import { isStaticToolUIPart, type UIMessage } from "ai";
import { describe, expect, it } from "vitest";
import type { JsonValue } from "../../schema/json.ts";
import { send, userMessage, withToolOutput } from "./ai-sdk-helpers.ts";
import { call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { ARGS_SCHEMA, activate, putTool, toolResults } from "./tool-api-helpers.ts";

// A client tool's result has the same bounds whichever way the page posts it: at most 256 KiB of
// JSON, its details at most 64 levels deep. `POST …/tool-results/…` refuses more with 400, and so
// does the AI SDK route (docs/ai-sdk.md "Client tools"), before any result is placed.

type ApiLane = Awaited<ReturnType<typeof laneSetup>>;

async function waitingOnTool(prefix: string): Promise<{ setup: ApiLane; question: UIMessage; waiting: UIMessage; toolCallId: string }> {
  const setup = await laneSetup(prefix);
  expect((await putTool(setup, "ask_user", { kind: "client", description: "Asks the user", parameters: ARGS_SCHEMA })).status).toBe(201);
  await useScript(setup, [{ toolCalls: [{ name: "ask_user", arguments: { question: "Which city?" } }] }, { text: "ok" }]);
  await activate(setup, ["ask_user"]);
  const question = userMessage("Plan my trip");
  const waiting = await send(setup, [question]);
  const part = waiting.parts.find((candidate) => isStaticToolUIPart(candidate));
  const toolCallId = part && isStaticToolUIPart(part) ? part.toolCallId : "";
  expect(toolCallId).not.toBe("");
  return { setup, question, waiting, toolCallId };
}

/** The AI SDK route's request as DefaultChatTransport sends it, answered as it is. */
function postChat(setup: ApiLane, messages: UIMessage[]): Promise<Response> {
  return call(`${setup.lanePath}/ai-sdk`, { body: { id: setup.sid, messages, trigger: "submit-message" }, token: setup.key });
}

describe("client tool results posted through the AI SDK route", () => {
  it("a result over 256 KiB is refused 400 as through REST, and nothing is placed", async () => {
    const { setup, question, waiting, toolCallId } = await waitingOnTool("aisdk_big");
    const output = "x".repeat(600 * 1024);
    const rest = await call(`${setup.lanePath}/operations/op_any/tool-results/${toolCallId}`, { body: { content: [{ type: "text", text: output }] }, token: setup.key });
    expect(rest.status).toBe(400);
    const refused = await postChat(setup, [question, withToolOutput(waiting, toolCallId, output)]);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { code: "ValidationFailed" } });
    expect(await toolResults(setup)).toEqual([]);
  });

  it("an output nested deeper than 64 levels is refused 400 as through REST, and nothing is placed", async () => {
    const { setup, question, waiting, toolCallId } = await waitingOnTool("aisdk_deep");
    let deep: JsonValue = "bottom";
    for (let i = 0; i < 80; i++) deep = { d: deep };
    const rest = await call(`${setup.lanePath}/operations/op_any/tool-results/${toolCallId}`, { body: { content: [{ type: "text", text: "x" }], details: deep }, token: setup.key });
    expect(rest.status).toBe(400);
    const answered: UIMessage = {
      ...waiting,
      parts: waiting.parts.map((part) => (isStaticToolUIPart(part) && part.toolCallId === toolCallId ? { type: part.type, toolCallId, state: "output-available", input: part.input, output: deep } : part)),
    };
    const refused = await postChat(setup, [question, answered]);
    expect(refused.status).toBe(400);
    expect(await toolResults(setup)).toEqual([]);
    // A result within the bounds is still taken.
    await send(setup, [question, withToolOutput(waiting, toolCallId, "Lisbon")], { continuing: waiting });
    expect((await toolResults(setup)).map((result) => result.text)).toEqual(["Lisbon"]);
  });
});
