import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { folded, pageMessages, send, textOf, transportOf, userMessage, withToolOutput } from "./ai-sdk-helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";
import { ARGS_SCHEMA, activate, putTool } from "./tool-api-helpers.ts";

// Spec "AI SDK compatibility": a lane speaks the protocol of the AI SDK's `useChat`, tested with the
// `ai` package's own `DefaultChatTransport` and `readUIMessageStream` against the real app.

const toolPart = (message: { parts: { type: string }[] }, name: string) => message.parts.find((part) => part.type === `tool-${name}`);

describe("POST …/ai-sdk with the AI SDK's DefaultChatTransport", () => {
  it("answers a prompt with a server tool call and its text; GET …/ai-sdk/messages gives the same conversation", async () => {
    const setup = await laneSetup("aisdk");
    expect((await putTool(setup, "values_set", { kind: "builtin" })).status).toBe(201);
    await useScript(setup, [{ toolCalls: [{ name: "values_set", arguments: { namespace: "app", key: "color", value: "blue" } }] }, { text: "Saved blue." }]);
    await activate(setup, ["values_set"]);
    const question = userMessage("Remember blue");
    const answer = await send(setup, [question]);
    expect(answer.role).toBe("assistant");
    expect(toolPart(answer, "values_set")).toMatchObject({ state: "output-available", input: { namespace: "app", key: "color", value: "blue" } });
    expect(textOf(answer)).toBe("Saved blue.");
    expect(answer.parts.filter((part) => part.type === "step-start")).toHaveLength(2);
    // The tool ran for real, once.
    expect(await (await call(`${setup.sessionPath}/values/app/color`, { token: setup.key })).json()).toMatchObject({ value: "blue" });

    const page = await pageMessages(setup);
    expect(page.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(textOf(page[0] ?? answer)).toBe("Remember blue");
    // The streamed answer's id is the stored one: a page that reloads holds the same message. The
    // stream marks the call the service ran `providerExecuted` (so the page's onToolCall is not
    // asked); the stored history does not say who ran a call that is done.
    expect(toolPart(answer, "values_set")).toMatchObject({ providerExecuted: true });
    const unmarked = answer.parts.map((part) => ("providerExecuted" in part ? { ...part, providerExecuted: undefined } : part));
    expect(page[1]).toEqual({ ...answer, parts: unmarked.map((part) => ("state" in part && part.type === "text" ? { ...part, state: "done" } : part)) });
  });

  it("streams an answer chunk by chunk with none lost: the folded text is the stored text", async () => {
    const setup = await laneSetup("aisdkchunks");
    const slow = slowStep(12);
    await useScript(setup, [slow]);
    const answer = await send(setup, [userMessage("stream it")]);
    expect(textOf(answer)).toBe(slow.text);
    expect(textOf((await pageMessages(setup))[1] ?? answer)).toBe(slow.text);
  });

  it("prompts once per user message: the same message sent again follows the run it started", async () => {
    const setup = await laneSetup("aisdkonce");
    await useScript(setup, [{ text: "only once" }, { text: "never" }]);
    const question = userMessage("hello");
    const first = await send(setup, [question]);
    const again = await send(setup, [question]);
    expect(textOf(first)).toBe("only once");
    expect(textOf(again)).toBe("only once");
    expect(again.id).toBe(first.id);
    expect((await pageMessages(setup)).map((message) => message.role)).toEqual(["user", "assistant"]);
    // Another text under the same message id is refused, and nothing runs.
    const conflict = await exports.default.fetch(`http://api.test${setup.lanePath}/ai-sdk`, {
      method: "POST",
      headers: { authorization: `Bearer ${setup.key}`, "content-type": "application/json" },
      body: JSON.stringify({ id: setup.sid, messages: [{ ...question, parts: [{ type: "text", text: "other" }] }], trigger: "submit-message" }),
    });
    expect(conflict.status).toBe(422);
    expect(await conflict.json()).toMatchObject({ error: { code: "IdempotencyConflict" } });
    expect(await pageMessages(setup)).toHaveLength(2);
  });

  it("ends the stream when the run waits on a client tool, and continues the same message with the page's result", async () => {
    const setup = await laneSetup("aisdkclient");
    expect((await putTool(setup, "ask_user", { kind: "client", description: "Asks the user", parameters: ARGS_SCHEMA })).status).toBe(201);
    await useScript(setup, [{ toolCalls: [{ name: "ask_user", arguments: { question: "Which city?" } }] }, { text: "Paris it is." }]);
    await activate(setup, ["ask_user"]);
    const question = userMessage("Plan my trip");
    const waiting = await send(setup, [question]);
    const call1 = toolPart(waiting, "ask_user");
    expect(call1).toMatchObject({ state: "input-available", input: { question: "Which city?" } });
    // What the page does in onToolCall: addToolOutput, then (sendAutomaticallyWhen) posts again.
    const answered = withToolOutput(waiting, call1 && "toolCallId" in call1 && typeof call1.toolCallId === "string" ? call1.toolCallId : "", "Paris");
    const done = await send(setup, [question, answered], { continuing: answered });
    expect(done.id).toBe(waiting.id);
    expect(toolPart(done, "ask_user")).toMatchObject({ state: "output-available", output: "Paris" });
    expect(textOf(done)).toBe("Paris it is.");
    const page = await pageMessages(setup);
    expect(page).toHaveLength(2);
    expect(toolPart(page[1] ?? done, "ask_user")).toMatchObject({ state: "output-available", output: "Paris" });
    expect(textOf(page[1] ?? done)).toBe("Paris it is.");
  });

  it("resumes a live answer from its start after the page went away (the transport's reconnectToStream), 204 when idle", async () => {
    const setup = await laneSetup("aisdkresume");
    const slow = slowStep(40);
    await useScript(setup, [slow]);
    const transport = transportOf(setup);
    expect(await transport.reconnectToStream({ chatId: setup.sid })).toBeNull();
    const question = userMessage("tell me slowly");
    const stream = await transport.sendMessages({ chatId: setup.sid, messages: [question], abortSignal: undefined, trigger: "submit-message", messageId: undefined });
    // The page reads a little, then reloads: its stream is dropped mid-answer.
    const reader = stream.getReader();
    for (let read = 0; read < 3; read++) await reader.read();
    await reader.cancel();
    await untilAt(setup, "assistant.effect_pending");
    // The reloaded page shows the prompt (not the half answer) and resumes.
    expect((await pageMessages(setup)).map((message) => message.role)).toEqual(["user"]);
    const resumed = await transport.reconnectToStream({ chatId: setup.sid });
    if (!resumed) throw new Error("nothing to resume");
    const answer = await folded(resumed);
    expect(textOf(answer)).toBe(slow.text);
    const page = await pageMessages(setup);
    expect(page.map((message) => message.id)).toEqual([page[0]?.id, answer.id]);
    expect(await transport.reconnectToStream({ chatId: setup.sid })).toBeNull();
    const wrongChat = await exports.default.fetch(`http://api.test${setup.lanePath}/ai-sdk/other-chat/stream`, { headers: { authorization: `Bearer ${setup.key}` } });
    expect(wrongChat.status).toBe(404);
  });

  it("shows a steer taken in mid-run as a steering part, and ends an aborted run's stream with `abort`", async () => {
    const setup = await laneSetup("aisdksteer");
    await useScript(setup, [slowStep(30), { text: "steered answer" }, slowStep(200)]);
    const chat = transportOf(setup);
    const streaming = chat.sendMessages({ chatId: setup.sid, messages: [userMessage("go")], abortSignal: undefined, trigger: "submit-message", messageId: undefined });
    await untilAt(setup, "assistant.effect_pending");
    expect((await call(`${setup.lanePath}/queue`, { body: { kind: "steer", message: "shorter please" }, token: setup.key })).status).toBe(201);
    const steered = await folded(await streaming);
    expect(steered.parts.find((part) => part.type === "steering-message")).toMatchObject({ parts: [{ type: "text", text: "shorter please" }] });
    expect(steered.parts.filter((part) => part.type === "text").at(-1)).toMatchObject({ text: "steered answer" });

    const chunks: string[] = [];
    const aborted = (await chat.sendMessages({ chatId: setup.sid, messages: [userMessage("again")], abortSignal: undefined, trigger: "submit-message", messageId: undefined })).getReader();
    await untilAt(setup, "assistant.effect_pending");
    expect((await call(`${setup.lanePath}/abort`, { method: "POST", token: setup.key })).status).toBe(200);
    for (let read = await aborted.read(); !read.done; read = await aborted.read()) chunks.push(read.value.type);
    expect(chunks[0]).toBe("start");
    expect(chunks.at(-1)).toBe("abort");
  });

  it("regenerates the last answer on a new branch of the tree, keeping the old one", async () => {
    const setup = await laneSetup("aisdkregen");
    await useScript(setup, [{ text: "first try" }, { text: "second try" }]);
    const question = userMessage("a poem");
    expect(textOf(await send(setup, [question]))).toBe("first try");
    const again = await send(setup, [question], { trigger: "regenerate-message" });
    expect(textOf(again)).toBe("second try");
    const page = await pageMessages(setup);
    expect(page.map((message) => [message.role, textOf(message)])).toEqual([
      ["user", "a poem"],
      ["assistant", "second try"],
    ]);
    const entries = await (await call(`${setup.sessionPath}/entries?limit=50`, { token: setup.key })).json<{ items: { type: string }[] }>();
    expect(entries.items.filter((entry) => entry.type === "message")).toHaveLength(4);
  });
});

describe("…/ai-sdk refusals", () => {
  const post = (path: string, body: unknown, key?: string) =>
    exports.default.fetch(`http://api.test${path}/ai-sdk`, { method: "POST", headers: { "content-type": "application/json", ...(key && { authorization: `Bearer ${key}` }) }, body: JSON.stringify(body) });

  it("answers 401 before 400, 400 for a body that is not the transport's, 422 for a message with nothing to say; nothing runs", async () => {
    const setup = await laneSetup("aisdkbad");
    expect((await post(setup.lanePath, { nope: true })).status).toBe(401);
    const missing = await post(setup.lanePath, { id: "c", trigger: "submit-message" }, setup.key);
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: { code: "ValidationFailed" } });
    const empty = await post(setup.lanePath, { id: "c", messages: [{ id: "m", role: "user", parts: [{ type: "text", text: " " }] }] }, setup.key);
    expect(empty.status).toBe(422);
    expect(await empty.json()).toMatchObject({ error: { code: "InvalidMessage" } });
    const remoteImage = await post(setup.lanePath, { id: "c", messages: [{ id: "m", role: "user", parts: [{ type: "file", mediaType: "image/png", url: "https://example.com/a.png" }] }] }, setup.key);
    expect(remoteImage.status).toBe(422);
    const regenerateNothing = await post(setup.lanePath, { id: "c", messages: [{ id: "m", role: "user", parts: [] }], trigger: "regenerate-message" }, setup.key);
    expect(regenerateNothing.status).toBe(422);
    expect(await pageMessages(setup)).toEqual([]);
  });

  it("keeps tenants apart: another tenant's key finds no session on any of the three routes", async () => {
    const setup = await laneSetup("aisdkiso");
    const other = await laneSetup("aisdkiso2");
    const message = { id: "c", messages: [userMessage("hi")] };
    expect((await post(setup.lanePath, message, other.key)).status).toBe(404);
    for (const path of [`${setup.lanePath}/ai-sdk/messages`, `${setup.lanePath}/ai-sdk/${setup.sid}/stream`]) {
      const response = await exports.default.fetch(`http://api.test${path}`, { headers: { authorization: `Bearer ${other.key}` } });
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ error: { code: "SessionNotFound" } });
    }
    expect(await pageMessages(setup)).toEqual([]);
  });
});

describe("…/ai-sdk with a browser token", () => {
  it("a prompt-scoped token chats on its own session; a watch-only token reads but cannot prompt; neither reaches another session", async () => {
    const setup = await laneSetup("aisdktoken");
    const other = await laneSetup("aisdktoken2");
    await useScript(setup, [{ text: "hi from the lane" }]);
    const mint = async (scopes: string[]) => (await (await call(`${setup.sessionPath}/tokens`, { body: { scopes, ttlSeconds: 600 }, token: setup.key })).json<{ token: string }>()).token;
    const chatter = await mint(["watch", "prompt"]);
    const reader = await mint(["watch"]);
    const answer = await folded(await transportOf(setup, chatter).sendMessages({ chatId: setup.sid, messages: [userMessage("hello")], abortSignal: undefined, trigger: "submit-message", messageId: undefined }));
    expect(textOf(answer)).toBe("hi from the lane");
    const read = await exports.default.fetch(`http://api.test${setup.lanePath}/ai-sdk/messages`, { headers: { authorization: `Bearer ${reader}` } });
    expect(read.status).toBe(200);
    const refused = await exports.default.fetch(`http://api.test${setup.lanePath}/ai-sdk`, {
      method: "POST",
      headers: { authorization: `Bearer ${reader}`, "content-type": "application/json" },
      body: JSON.stringify({ id: setup.sid, messages: [userMessage("again")] }),
    });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ error: { code: "TokenScope" } });
    const elsewhere = await exports.default.fetch(`http://api.test${other.lanePath}/ai-sdk/messages`, { headers: { authorization: `Bearer ${chatter}` } });
    expect(elsewhere.status).toBe(403);
  });
});
