import { describe, expect, it } from "vitest";
import { PROMPT_ANSWER_LIMITS } from "../../schema/lane-answers.ts";
import type { AgentMessage } from "../../schema/messages.ts";
import { userMessage } from "../helpers/messages.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// The prompt convenience answers what the caller came for: the settled record plus the messages
// the run appended to the lane's branch (oldest first, the final assistant message last), bounded.

interface PromptAnswer {
  operationId: string;
  kind: string;
  status: string;
  fromTipId: string | null;
  tipId: string | null;
  messages: AgentMessage[];
  messagesTruncated: boolean;
}

const text = (message: AgentMessage | undefined): string => {
  if (!message || !("content" in message)) return `<${message?.role}>`;
  const content = message.content;
  if (typeof content === "string") return `${message.role}: ${content}`;
  return `${message.role}: ${content.map((part) => ("text" in part ? part.text : "")).join("")}`;
};

async function prompt(lanePath: string, key: string, body: unknown): Promise<PromptAnswer> {
  const response = await call(`${lanePath}/prompt`, { body, token: key });
  expect(response.status).toBe(200);
  return response.json<PromptAnswer>();
}

describe("POST …/lanes/{lane}/prompt answers the messages of the run", () => {
  it("returns the settled record with the prompt and the final assistant message", async () => {
    const { key, lanePath } = await laneSetup("answer_echo");
    const answer = await prompt(lanePath, key, { prompt: "hello there", wait: 30 });
    expect(answer).toMatchObject({ kind: "run", status: "completed", fromTipId: null, messagesTruncated: false });
    expect(answer.messages.map(text)).toEqual(["user: hello there", "assistant: hello there"]);
    expect(answer.messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "stop" });
  });

  it("returns only the messages of this run, not the lane's earlier history", async () => {
    const { key, lanePath } = await laneSetup("answer_second");
    const first = await prompt(lanePath, key, { prompt: "first", wait: 30 });
    const second = await prompt(lanePath, key, { prompt: "second", wait: 30 });
    expect(second.fromTipId).toBe(first.tipId);
    expect(second.messages.map(text)).toEqual(["user: second", "assistant: second"]);
  });

  it("keeps the newest messages up to the count bound and says that older ones were left out", async () => {
    const { key, lanePath } = await laneSetup("answer_count");
    const count = PROMPT_ANSWER_LIMITS.messages + 5;
    const messages = Array.from({ length: count }, (_, i) => userMessage(`m${i}`));
    const answer = await prompt(lanePath, key, { prompt: messages, wait: 30 });
    expect(answer.messagesTruncated).toBe(true);
    expect(answer.messages).toHaveLength(PROMPT_ANSWER_LIMITS.messages);
    expect(answer.messages.map(text).slice(-2)).toEqual([`user: m${count - 1}`, `assistant: m${count - 1}`]);
  });

  it("keeps the newest messages within the byte bound, the final assistant message always", async () => {
    const { key, lanePath } = await laneSetup("answer_bytes");
    // Two user messages of ~48% of the bound each; echo answers the last one, cut at its output
    // limit (32K characters) like a real model: the three together exceed the bound, the newest two fit.
    const big = (tag: string) => `${tag}${"x".repeat(Math.floor(PROMPT_ANSWER_LIMITS.bytes * 0.48))}`;
    const answer = await prompt(lanePath, key, { prompt: [userMessage(big("a")), userMessage(big("b"))], wait: 30 });
    expect(answer.messagesTruncated).toBe(true);
    expect(answer.messages.map((message) => text(message).slice(0, 12))).toEqual(["user: bxxxxx", "assistant: b"]);
  });

  it("answers 202 with the id and no messages when the wait runs out", async () => {
    const { key, lanePath } = await laneSetup("answer_pending");
    await call(`${lanePath}/config`, { method: "PATCH", body: { model: { provider: "scripted", modelId: "script" } }, token: key });
    const sessionPath = lanePath.replace(/\/lanes\/main$/, "");
    await call(`${sessionPath}/lists/scripted/steps`, { body: { text: "slow words arrive one by one here", chunkMs: 400 }, token: key });
    const response = await call(`${lanePath}/prompt`, { body: { prompt: "go", wait: 0 }, token: key });
    expect(response.status).toBe(202);
    expect(Object.keys(await response.json<object>())).toEqual(["operationId"]);
  });
});

describe("the OpenAPI document", () => {
  it("describes the prompt answer's messages", async () => {
    const document = await (await call("/openapi.json")).json<{ paths: Record<string, { post: { responses: Record<string, unknown> } }>; components: { schemas: Record<string, unknown> } }>();
    const answer = JSON.stringify(document.paths["/v1/sessions/{sid}/lanes/{lane}/prompt"]?.post.responses["200"]);
    expect(answer).toContain("#/components/schemas/PromptAnswer");
    const settled = JSON.stringify(document.components.schemas.PromptAnswer);
    expect(settled).toContain("messagesTruncated");
    expect(settled).toContain("#/components/schemas/AgentMessage");
  });
});
