import { expect, inject } from "vitest";
import "../provided-context.ts";
import type { LaneSnapshot, OperationResultRecord } from "../../schema/lane.ts";
import type { ToolCallContext } from "../../schema/tools.ts";
import { runDurableObjectAlarm } from "cloudflare:test";
import { call } from "./helpers.ts";
import { laneSetup, untilAt, useScript } from "./lane-helpers.ts";
import { objectOf } from "./session-helpers.ts";

// Tools over the REST API, as a tenant drives them: definitions, a prompt, the settled record and
// the placed tool results; and the local webhook (test/node/tool-webhook-server.ts) the http tools
// call over real HTTP.

export const ARGS_SCHEMA = { type: "object", properties: { question: { type: "string" } }, required: ["question"] };

export interface ApiLane {
  key: string;
  sessionPath: string;
  lanePath: string;
}

export function putTool(setup: Pick<ApiLane, "key" | "sessionPath">, name: string, body: unknown): Promise<Response> {
  return call(`${setup.sessionPath}/tools/${name}`, { method: "PUT", body, token: setup.key });
}

export async function activate(setup: Pick<ApiLane, "key" | "lanePath">, names: string[]): Promise<void> {
  const patched = await call(`${setup.lanePath}/config`, { method: "PATCH", body: { activeTools: names }, token: setup.key });
  expect(patched.status).toBe(200);
}

export async function prompt(setup: Pick<ApiLane, "key" | "lanePath">): Promise<string> {
  const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "go" }, token: setup.key });
  expect(accepted.status).toBe(202);
  return (await accepted.json<{ operationId: string }>()).operationId;
}

/**
 * Long-polls the operation until it settles, bounded by time: a wait answers at once while the run
 * sits in a durable wait (a client call before its deadline alarm), so the poll also pauses.
 */
export async function settle(setup: Pick<ApiLane, "key" | "lanePath">, operationId: string): Promise<OperationResultRecord> {
  const deadline = Date.now() + 25_000;
  while (Date.now() < deadline) {
    const view = await (await call(`${setup.lanePath}/operations/${operationId}?wait=5`, { token: setup.key })).json<{ state: string; result?: OperationResultRecord }>();
    if (view.state === "settled" && view.result) return view.result;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("the operation never settled");
}

export interface PlacedToolResult {
  id: string;
  toolCallId: string;
  text: string;
  isError: boolean;
}

/** The tool results placed on the lane's branch, oldest first. */
export async function toolResults(setup: Pick<ApiLane, "key" | "lanePath">): Promise<PlacedToolResult[]> {
  const snapshot = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: LaneSnapshot }>();
  return snapshot.snapshot.transcript.flatMap((entry) =>
    entry.type === "message" && entry.message.role === "toolResult"
      ? [{ id: entry.id, toolCallId: entry.message.toolCallId, text: entry.message.content.map((block) => (block.type === "text" ? block.text : "")).join(""), isError: entry.message.isError }]
      : [],
  );
}

/** Only what the model reads of each placed result. */
export async function resultTexts(setup: Pick<ApiLane, "key" | "lanePath">): Promise<{ text: string; isError: boolean }[]> {
  return (await toolResults(setup)).map(({ text, isError }) => ({ text, isError }));
}

/** One call as the local webhook received it. */
export interface ReceivedCall {
  behaviour: string;
  idempotencyKey: string | null;
  timestamp: string | null;
  signatureValid: boolean;
  body: { tool: string; toolCallId: string; invocationId: string; operationId: string; arguments: unknown; context?: ToolCallContext } | string;
}

let scopes = 0;

/**
 * A scope of the local webhook: `hookUrl(behaviour)` is a tool URL, `trust(behaviour, secret)`
 * hands the webhook the secret it verifies that URL's calls with, `received()` lists the calls it got.
 */
export function webhook(prefix: string) {
  const base = inject("toolWebhookUrl");
  const scope = `${prefix}-${Date.now().toString(36)}-${(scopes++).toString(36)}`;
  return {
    hookUrl: (behaviour: string) => `${base}/hooks/${scope}/${behaviour}`,
    async trust(behaviour: string, secret: string): Promise<void> {
      const stored = await fetch(`${base}/secrets/${scope}/${behaviour}`, { method: "PUT", body: secret });
      expect(stored.status).toBe(204);
    },
    async received(): Promise<ReceivedCall[]> {
      return (await fetch(`${base}/requests/${scope}`)).json<ReceivedCall[]>();
    },
  };
}

/**
 * A lane whose run waits, parked, for a client tool (`ask_user`) to be answered: the run's call is
 * running, and the acceptance's safety-net alarm has fired (here: at once) and re-armed nothing.
 * `then`: what the model answers once the tool has its result.
 */
export async function parkedOnClientTool(prefix: string, then = "the answer after the tool") {
  const setup = await laneSetup(prefix);
  expect((await putTool(setup, "ask_user", { kind: "client", description: "Asks the user", parameters: ARGS_SCHEMA })).status).toBe(201);
  await useScript(setup, [{ toolCalls: [{ name: "ask_user", arguments: { question: "ok?" } }] }, { text: then }]);
  await call(`${setup.lanePath}/config`, { method: "PATCH", body: { activeTools: ["ask_user"] }, token: setup.key });
  const operationId = await prompt(setup);
  await untilAt(setup, "tools");
  for (let i = 0; i < 200; i++) {
    const snapshot = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: LaneSnapshot }>();
    if (snapshot.snapshot.operation?.runningTools[0]) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await runDurableObjectAlarm(objectOf(setup.tenantId, setup.sid));
  return { setup, operationId };
}
