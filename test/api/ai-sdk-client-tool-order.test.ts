import { isStaticToolUIPart, lastAssistantMessageIsCompleteWithToolCalls, type UIMessage } from "ai";
import { describe, expect, it } from "vitest";
import { send, textOf, userMessage, withToolOutput } from "./ai-sdk-helpers.ts";
import { call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { ARGS_SCHEMA, activate, putTool, resultTexts } from "./tool-api-helpers.ts";

// docs/ai-sdk.md "Client tools": when the run waits on the page the stream ends with
// `finishReason: "tool-calls"`; the page answers (`addToolOutput`) and, with
// `sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls`, posts again. That check
// needs every tool part of the last step the page does not run to be done or marked
// `providerExecuted`, and the page's `onToolCall` must see only its own calls. Two ways it broke:
// - a client call listed before a server call of the same response ended the stream before the
//   server call's output (parallel mode), so the check never passed and the page hung;
// - in a sequential batch the stream showed a client call that had not started (held back behind
//   another); the page answered it, its output was dropped, and the page was asked again.
// Now calls are shown as they start, the service's own marked `providerExecuted`, and the stream
// ends once no call of the step is still to start but those held back behind a client call.

const toolParts = (message: UIMessage) => message.parts.filter(isStaticToolUIPart);

describe("the answer stream and client calls among other calls", () => {
  it("parallel: a client call before a server call ends the stream only after the server call's output", async () => {
    const setup = await laneSetup("aisdk_order_par");
    expect((await putTool(setup, "ask_user", { kind: "client", description: "Asks the user", parameters: ARGS_SCHEMA })).status).toBe(201);
    expect((await putTool(setup, "values_set", { kind: "builtin" })).status).toBe(201);
    await useScript(setup, [
      {
        toolCalls: [
          { name: "ask_user", arguments: { question: "Which city?" } },
          { name: "values_set", arguments: { namespace: "app", key: "color", value: "blue" } },
        ],
      },
      { text: "done" },
    ]);
    await activate(setup, ["ask_user", "values_set"]);
    const question = userMessage("Plan my trip");
    const waiting = await send(setup, [question]);
    const client = toolParts(waiting).find((part) => part.type === "tool-ask_user");
    const server = toolParts(waiting).find((part) => part.type === "tool-values_set");
    expect(client).toMatchObject({ state: "input-available" });
    expect(client?.providerExecuted).not.toBe(true);
    // The service's own call is done, and marked as the service's.
    expect(server).toMatchObject({ state: "output-available", providerExecuted: true });
    const answered = withToolOutput(waiting, client?.toolCallId ?? "", "Paris");
    expect(lastAssistantMessageIsCompleteWithToolCalls({ messages: [question, answered] })).toBe(true);
    const done = await send(setup, [question, answered], { continuing: answered });
    expect(textOf(done)).toBe("done");
    expect(await (await call(`${setup.sessionPath}/values/app/color`, { token: setup.key })).json()).toMatchObject({ value: "blue" });
  });

  it("sequential: each client call is shown when it starts, answered once, and the run goes on", async () => {
    const setup = await laneSetup("aisdk_order_seq");
    expect((await call(setup.sessionPath, { method: "PATCH", body: { settings: { toolExecution: "sequential" } }, token: setup.key })).status).toBe(200);
    expect((await putTool(setup, "ask_user", { kind: "client", description: "Asks the user", parameters: ARGS_SCHEMA })).status).toBe(201);
    await useScript(setup, [
      {
        toolCalls: [
          { name: "ask_user", arguments: { question: "Which city?" } },
          { name: "ask_user", arguments: { question: "Which month?" } },
        ],
      },
      { text: "Paris in May." },
    ]);
    await activate(setup, ["ask_user"]);
    const question = userMessage("Plan my trip");
    const firstWait = await send(setup, [question]);
    // Only the call that started is shown: the second waits behind it.
    const [first, ...rest] = toolParts(firstWait);
    expect(rest).toEqual([]);
    expect(first).toMatchObject({ state: "input-available", input: { question: "Which city?" } });
    const firstAnswered = withToolOutput(firstWait, first?.toolCallId ?? "", "Paris");
    expect(lastAssistantMessageIsCompleteWithToolCalls({ messages: [question, firstAnswered] })).toBe(true);

    const secondWait = await send(setup, [question, firstAnswered], { continuing: firstAnswered });
    const waitingNow = toolParts(secondWait).filter((part) => part.state === "input-available");
    expect(waitingNow).toHaveLength(1);
    expect(waitingNow[0]).toMatchObject({ input: { question: "Which month?" } });
    const secondAnswered = withToolOutput(secondWait, waitingNow[0]?.toolCallId ?? "", "May");
    expect(lastAssistantMessageIsCompleteWithToolCalls({ messages: [question, secondAnswered] })).toBe(true);

    const done = await send(setup, [question, secondAnswered], { continuing: secondAnswered });
    expect(toolParts(done).filter((part) => part.state !== "output-available")).toEqual([]);
    expect(textOf(done)).toBe("Paris in May.");
    expect(await resultTexts(setup)).toEqual([
      { text: "Paris", isError: false },
      { text: "May", isError: false },
    ]);
  });
});
