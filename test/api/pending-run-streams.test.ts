import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sseReader } from "../helpers/sse-reader.ts";
import { folded, textOf, transportOf, userMessage } from "./ai-sdk-helpers.ts";
import { call } from "./helpers.ts";
import { eventsOf } from "./sse-helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";
import { ARGS_SCHEMA, activate, putTool } from "./tool-api-helpers.ts";

// The streams that follow one run (a streamed `POST …/prompt`, an AI SDK answer) when that run is
// not the lane's current one: a pending run (`ifBusy: "enqueue"`) waiting behind another, cancelled
// before it starts, repeated while it waits; and an AI SDK message handed to a running operation
// (`ifBusy: "steer"`), whose stream joins that run in the middle.

type Setup = Awaited<ReturnType<typeof laneSetup>>;

/** A lane whose first run is slowly streaming its answer (its step's words end with `w199`). */
async function busyLane(prefix: string): Promise<Setup> {
  const setup = await laneSetup(prefix);
  await useScript(setup, [slowStep(200), { text: "second answer" }]);
  const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "first" }, token: setup.key });
  expect(accepted.status).toBe(202);
  await untilAt(setup, "assistant.effect_pending");
  return setup;
}

async function pendingId(setup: Setup): Promise<string> {
  const listed = await (await call(`${setup.lanePath}/pending`, { token: setup.key })).json<{ items: { operationId: string }[] }>();
  const id = listed.items[0]?.operationId;
  if (!id) throw new Error("no pending run");
  return id;
}

function post(setup: Setup, route: "prompt" | "ai-sdk", body: object, accept?: string): Promise<Response> {
  return exports.default.fetch(`http://api.test${setup.lanePath}/${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${setup.key}`, "content-type": "application/json", ...(accept && { accept }) },
    body: JSON.stringify(body),
  });
}

function chatBody(setup: Setup, messageId: string, text: string): object {
  return { id: setup.sid, trigger: "submit-message", ifBusy: "enqueue", messages: [{ id: messageId, role: "user", parts: [{ type: "text", text }] }] };
}

describe("streams of a run that is not the lane's current one", { timeout: 60_000 }, () => {
  it("a streamed prompt of a pending run cancelled before it starts ends with its aborted record", async () => {
    const setup = await busyLane("pstcancel");
    const response = await post(setup, "prompt", { prompt: "second", ifBusy: "enqueue" }, "text/event-stream");
    expect(response.status).toBe(200);
    if (!response.body) throw new Error("no body");
    const reader = sseReader(response.body);
    const id = await pendingId(setup);
    expect((await call(`${setup.lanePath}/operations/${id}/abort`, { method: "POST", token: setup.key })).status).toBe(200);
    // The cancellation's run_end (a run that never started) ends the stream with the record.
    const items = await reader.until((item) => item.event === "result", true);
    expect(JSON.parse(items.at(-1)?.data ?? "null")).toMatchObject({ operationId: id, status: "aborted", error: { code: "cancelled_before_start" } });
    expect(eventsOf(items).map(({ event }) => event.type)).toEqual(["run_end"]);
    await reader.cancel();
  });

  it("an AI SDK answer of a pending run cancelled before it starts ends with `abort`", async () => {
    const setup = await busyLane("pstchat");
    const response = await post(setup, "ai-sdk", chatBody(setup, "m-pending", "second"));
    expect(response.status).toBe(200);
    if (!response.body) throw new Error("no body");
    const reader = sseReader(response.body);
    const id = await pendingId(setup);
    expect((await call(`${setup.lanePath}/operations/${id}/abort`, { method: "POST", token: setup.key })).status).toBe(200);
    const items = await reader.until((item) => item.data === "[DONE]", true);
    expect(items.map((item) => (item.data === "[DONE]" ? "[DONE]" : (JSON.parse(item.data) as { type: string }).type))).toEqual(["start", "abort", "[DONE]"]);
    await reader.cancel();
  });

  it("a streamed prompt of a pending run relays its own entries, not those of the run ahead of it", async () => {
    const setup = await busyLane("pstown");
    const response = await post(setup, "prompt", { prompt: "second", ifBusy: "enqueue" }, "text/event-stream");
    expect(response.status).toBe(200);
    if (!response.body) throw new Error("no body");
    const items = await sseReader(response.body).until((item) => item.event === "result", true);
    const entries = eventsOf(items).flatMap(({ event }) => (event.type === "entry_added" && event.entry.type === "message" ? [event.entry.message] : []));
    expect(entries.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(JSON.stringify(entries)).not.toContain("w199");
    expect(JSON.stringify(entries[0])).toContain("second");
    expect(JSON.parse(items.at(-1)?.data ?? "null")).toMatchObject({ status: "completed" });
  });

  it("an AI SDK message repeated while its run waits in line follows that run to its answer", async () => {
    const setup = await busyLane("pstrepeat");
    const first = await post(setup, "ai-sdk", chatBody(setup, "m-repeat", "second"));
    expect(first.status).toBe(200);
    await pendingId(setup);
    const again = await post(setup, "ai-sdk", chatBody(setup, "m-repeat", "second"));
    expect(again.status).toBe(200);
    if (!again.body) throw new Error("no body");
    const items = await sseReader(again.body).until((item) => item.data === "[DONE]", true);
    const chunks = items.filter((item) => item.data !== "[DONE]").map((item) => JSON.parse(item.data) as { type: string; delta?: string });
    expect(chunks.map((chunk) => chunk.type)).not.toContain("error");
    expect(chunks.flatMap((chunk) => (chunk.type === "text-delta" ? [chunk.delta] : [])).join("")).toBe("second answer");
    expect(chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
    await first.body?.cancel();
  });

  it("an AI SDK message steered into a run waiting on a client tool folds without error when the tool's result arrives", async () => {
    const setup = await laneSetup("pststeer");
    expect((await putTool(setup, "ask_user", { kind: "client", description: "Asks the user", parameters: ARGS_SCHEMA })).status).toBe(201);
    await useScript(setup, [{ toolCalls: [{ name: "ask_user", arguments: { question: "Which city?" } }] }, { text: "Paris it is." }]);
    await activate(setup, ["ask_user"]);
    const chat = transportOf(setup);
    const question = userMessage("Plan my trip");
    const waiting = await folded(await chat.sendMessages({ chatId: setup.sid, messages: [question], abortSignal: undefined, trigger: "submit-message", messageId: undefined }));
    const toolCall = waiting.parts.find((part) => part.type === "tool-ask_user");
    const toolCallId = toolCall && "toolCallId" in toolCall ? toolCall.toolCallId : "";
    // The page sends another message while the run waits; it is handed to the running run.
    const steered = await chat.sendMessages({ chatId: setup.sid, messages: [question, waiting, userMessage("hurry up")], abortSignal: undefined, trigger: "submit-message", messageId: undefined, body: { ifBusy: "steer" } });
    const { snapshot } = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: { operation: { id: string } } }>();
    const posted = await call(`${setup.lanePath}/operations/${snapshot.operation.id}/tool-results/${toolCallId}`, { body: { content: [{ type: "text", text: "Paris" }] }, token: setup.key });
    expect(posted.status).toBe(202);
    // The stream joined the run after the call was announced: its result is not sent as the
    // output of a call this stream never showed (the AI SDK's reader refuses that).
    const answer = await folded(steered);
    expect(textOf(answer), JSON.stringify(answer.parts)).toBe("Paris it is.");
  });
});
