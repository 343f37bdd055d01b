import { DefaultChatTransport, readUIMessageStream, type UIMessage } from "ai";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient, type FetchLike } from "../../client/index.ts";
import { newTenant } from "../api/helpers.ts";

// client.lanes.aiSdkApi / aiSdkMessages (docs/ai-sdk.md) against the real app: the URL the SDK
// gives is what the AI SDK's transport chats through, and the messages it reads are the page's.

const BASE_URL = "http://api.test";
const appFetch: FetchLike = (input, init) => exports.default.fetch(input, init);

describe("the SDK's AI SDK helpers", () => {
  it("aiSdkApi is the lane's chat endpoint for DefaultChatTransport; aiSdkMessages reads the conversation back", async () => {
    const { key } = await newTenant("sdk_aisdk");
    const client = createClient({ baseUrl: BASE_URL, key, fetch: appFetch });
    const { id } = await client.sessions.create();
    await client.lanes.put(id, "main", { model: { provider: "scripted", modelId: "echo" } });
    expect(client.lanes.aiSdkApi(id, "main")).toBe(`${BASE_URL}/v1/sessions/${id}/lanes/main/ai-sdk`);
    expect(await client.lanes.aiSdkMessages(id, "main")).toEqual([]);

    const transport = new DefaultChatTransport({ api: client.lanes.aiSdkApi(id, "main"), headers: { authorization: `Bearer ${key}` }, fetch: (input, init) => exports.default.fetch(new Request(input, init)) });
    const question: UIMessage = { id: "first", role: "user", parts: [{ type: "text", text: "echo me" }] };
    let answer: UIMessage | undefined;
    const stream = await transport.sendMessages({ chatId: id, messages: [question], abortSignal: undefined, trigger: "submit-message", messageId: undefined });
    for await (const message of readUIMessageStream({ stream })) answer = message;

    const messages = await client.lanes.aiSdkMessages(id, "main");
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(messages[0]?.parts).toEqual([{ type: "text", text: "echo me" }]);
    expect(messages[1]).toMatchObject({ id: answer?.id, parts: [{ type: "step-start" }, { type: "text", text: "echo me", state: "done" }] });
  });
});
