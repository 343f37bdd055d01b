import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { afterAll, describe, expect, it } from "vitest";
import { Api, createTenant, pollUntil, readAdminToken, scriptedSession, words } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// docs/ai-sdk.md against `npm start`, as a page using `useChat` talks to it: the `ai` package's own
// DefaultChatTransport and readUIMessageStream over real HTTP. A conversation with a tool call,
// then an answer the page leaves mid-stream (a reload) while the whole server is killed: after the
// restart the page resumes and gets the whole answer, once.

type LaneInfo = { current: { at: string } | null };

describe("a useChat client against npm start", () => {
  const persistDir = mkdtempSync(join(tmpdir(), "das-e2e-usechat-"));
  const servers: DevServer[] = [];
  printServerOutputOnFailure(() => servers);
  afterAll(async () => {
    for (const server of servers) await server.stop();
    rmSync(persistDir, { recursive: true, force: true });
  });

  const transport = (baseUrl: string, key: string, sid: string) =>
    new DefaultChatTransport({ api: `${baseUrl}/v1/sessions/${sid}/lanes/main/ai-sdk`, headers: { authorization: `Bearer ${key}` } });
  const send = (chat: DefaultChatTransport<UIMessage>, sid: string, messages: UIMessage[]) =>
    chat.sendMessages({ chatId: sid, messages, abortSignal: undefined, trigger: "submit-message", messageId: undefined });
  async function fold(stream: ReadableStream<UIMessageChunk>): Promise<UIMessage> {
    let last: UIMessage | undefined;
    for await (const message of readUIMessageStream({ stream })) last = message;
    if (!last) throw new Error("no message");
    return last;
  }
  const text = (message: UIMessage | undefined) => (message?.parts ?? []).map((part) => (part.type === "text" ? part.text : "")).join("");
  const user = (id: string, words: string): UIMessage => ({ id, role: "user", parts: [{ type: "text", text: words }] });

  it("completes a conversation with a tool call, then resumes an answer after a reload and a server kill", async () => {
    const first = await startDevServer({ persistDir });
    servers.push(first);
    const { key, api } = await createTenant(new Api(first.baseUrl, readAdminToken()), "usechat");
    const sid = "use-chat";
    await scriptedSession(api, sid);
    await api.expect(201, "PUT", `/v1/sessions/${sid}/tools/values_set`, { body: { kind: "builtin" } });
    await api.expect(200, "PATCH", `/v1/sessions/${sid}/lanes/main/config`, { body: { activeTools: ["values_set"] } });
    const slow = words(80, "slow");
    const steps = [{ toolCalls: [{ name: "values_set", arguments: { namespace: "trip", key: "city", value: "Lisbon" } }] }, { text: "Noted: Lisbon." }, { text: slow, chunkMs: 100 }, { text: "After the restart." }];
    for (const step of steps) await api.expect(201, "POST", `/v1/sessions/${sid}/lists/scripted/steps`, { body: step });

    // 1. A turn with a tool call: the tool's part and the final text, in one assistant message.
    const chat = transport(first.baseUrl, key, sid);
    const question = user("q1", "Remember Lisbon");
    const answer = await fold(await send(chat, sid, [question]));
    expect(answer.parts.find((part) => part.type === "tool-values_set")).toMatchObject({ state: "output-available", input: { value: "Lisbon" } });
    expect(text(answer)).toBe("Noted: Lisbon.");
    expect(await api.expect(200, "GET", `/v1/sessions/${sid}/values/trip/city`)).toMatchObject({ value: "Lisbon" });

    // 2. The page sends again, reads a little and reloads; meanwhile the server is killed.
    const stream = await send(chat, sid, [question, answer, user("q2", "Tell me a long story")]);
    const reader = stream.getReader();
    for (let read = 0; read < 4; read++) await reader.read();
    await reader.cancel();
    await pollUntil("the answer to stream", () => api.expect<LaneInfo>(200, "GET", `/v1/sessions/${sid}/lanes/main`), (lane) => lane.current?.at === "assistant.effect_pending");
    await first.kill();

    const second = await startDevServer({ persistDir });
    servers.push(second);
    const again = new Api(second.baseUrl, key);
    const reloaded = transport(second.baseUrl, key, sid);
    // The reloaded page resumes; the run recovers (its interrupted response is retried) and the
    // resumed stream carries the answer to its end. Until the run is live again there may be
    // nothing to resume (204): the page's next load resumes then.
    const resumed = await pollUntil("a live answer to resume", () => reloaded.reconnectToStream({ chatId: sid }), (value) => value !== null, 60_000);
    if (!resumed) throw new Error("nothing to resume");
    const story = await fold(resumed);
    expect(text(story)).toBe("After the restart.");

    // The page's messages once it settles: each message once, the resumed answer under its id.
    const page = await pollUntil(
      "the settled conversation",
      () => again.expect<UIMessage[]>(200, "GET", `/v1/sessions/${sid}/lanes/main/ai-sdk/messages`),
      (messages) => messages.length === 4,
    );
    expect(page.map((message) => [message.role, text(message)])).toEqual([
      ["user", "Remember Lisbon"],
      ["assistant", "Noted: Lisbon."],
      ["user", "Tell me a long story"],
      ["assistant", "After the restart."],
    ]);
    expect(page[3]?.id).toBe(story.id);
    expect(await reloaded.reconnectToStream({ chatId: sid })).toBeNull();
  }, 180_000);
});
