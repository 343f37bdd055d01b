import type { ToolsPort } from "../../../harness/execution/tools.ts";
import type { Result } from "../../../harness/runtime/errors.ts";
import type { AgentLane } from "../../../harness/runtime/lane.ts";
import type { DriveOutcome } from "../../../harness/runtime/types.ts";
import type { Session } from "../../../harness/session/session.ts";
import type { ScriptStep, ScriptToolCall } from "../../../models/scripted/steps.ts";
import type { HarnessSettingsPatch } from "../../../schema/settings-patch.ts";
import { unwrap } from "../drive-helpers.ts";
import { transcriptOf, type Attached } from "../crash-rig.ts";
import { defineTool, testTools } from "../tool-helpers.ts";
import type { IntentName } from "./table.ts";

// The intents the engine driver runs (driver.ts): each is a script for the scripted model, the
// settings, the history it needs (a compaction needs something to compact, a navigation somewhere
// to go), how it is accepted and how it is driven to its end. The http and MCP tool intents need
// real local servers and run through the hosted object instead (hosted.ts).

export interface EngineIntent {
  steps: ScriptStep[];
  settings: HarnessSettingsPatch;
  /** What comes before the operation (earlier runs, tool definitions); not part of the crash. */
  history(rig: Attached, lane: AgentLane): Promise<void>;
  /** Accepts the operation; returns its id. */
  start(rig: Attached, lane: AgentLane): Promise<string>;
  /** Drives the operation to its end (the first pass, the reopened one, and the uninterrupted one). */
  finish(lane: AgentLane, operationId: string): Promise<Result<DriveOutcome>>;
  tools?: (session: Session) => ToolsPort;
  /** Index in `steps` of the operation's first provider request (runs). */
  responseAt?: number;
  /**
   * No steer in flight for this run (a nextRun still is). The threshold compaction: a placed steer
   * goes before the threshold compaction of its boundary (reference §3.6 step 3), so the steer
   * changes which scripted step answers the summary and which the run, at a point that differs by
   * cell; the uninterrupted run is then not a fixed script. Steers are checked by the other runs.
   */
  noSteer?: true;
  /** Index in `steps` of the operation's first summary request, with the hook and request step that precede it. */
  summary?: { at: number; hook: "before_compaction" | "before_navigation"; step: "compaction" | "branch_summary" };
}

/** Retries on, at once: an unknown outcome or a failure is retried like in production. */
const RETRY = { retry: { enabled: true, maxRetries: 2, baseDelayMs: 0 } };
/** Keeps the last user turn: one history summary request, no split turn. */
const KEEP_LAST_TURN: HarnessSettingsPatch = { ...RETRY, compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } };
/** Compacts when the context passes 50 tokens of the scripted model's 128,000-token window. */
const THRESHOLD: HarnessSettingsPatch = { ...RETRY, compaction: { enabled: true, reserveTokens: 128_000 - 50, keepRecentTokens: 2 } };

const small = (text: string): ScriptStep => ({ text, usage: { input: 10, output: 1 } });
const big = (text: string): ScriptStep => ({ text, usage: { input: 100, output: 1 } });
const later = (ready: ScriptStep): ScriptStep => ({ deferred: { ready } });

export const CLIENT_ANSWER = { content: [{ type: "text", text: "the user said yes" }] };
/** The builtin member of the tool class: `wait` (safe, memoised start, a progress checkpoint every second). */
export const WAIT_SECONDS = 1.5;

const prompt = async (_rig: Attached, lane: AgentLane): Promise<string> => unwrap(await lane.accept({ kind: "prompt", prompt: "go" })).operationId;
const drive = (lane: AgentLane, operationId: string) => lane.drive({ operationId, waitForRetry: true });
const nothing = async (): Promise<void> => {};
const converse = async (_rig: Attached, lane: AgentLane): Promise<void> => {
  unwrap(await lane.prompt("one"));
  unwrap(await lane.prompt("two"));
};

/** Polls with a permit until the deferred run settles (each poll may find the response still pending). */
async function pollToEnd(lane: AgentLane, operationId: string): Promise<Result<DriveOutcome>> {
  let driven = await lane.drive({ operationId, waitForRetry: true, pollDeferred: true });
  for (let i = 0; i < 5 && driven.ok && driven.value.kind === "waiting"; i++) driven = await lane.drive({ operationId, waitForRetry: true, pollDeferred: true });
  return driven;
}

/** The id of the client tool call in the transcript (the one the client answers). */
function clientCallId(lane: AgentLane): string | undefined {
  for (const entry of transcriptOf(lane)) {
    if (entry.type !== "message" || entry.message.role !== "assistant") continue;
    const call = entry.message.content.find((block) => block.type === "toolCall" && block.name === "ask_user");
    if (call?.type === "toolCall") return call.id;
  }
  return undefined;
}

/** The client's side: answers the waiting call once (unless its answer is already stored), then drives on. */
export async function answerClient(lane: AgentLane, operationId: string): Promise<Result<DriveOutcome>> {
  let driven = await drive(lane, operationId);
  for (let i = 0; i < 3 && driven.ok && driven.value.kind === "waiting" && driven.value.reason === "client_tool"; i++) {
    await postClientAnswer(lane, operationId);
    driven = await drive(lane, operationId);
  }
  return driven;
}

/** Posts the client's answer to the waiting call (the tenant's client, through the lane). */
export async function postClientAnswer(lane: AgentLane, operationId: string): Promise<void> {
  const callId = clientCallId(lane);
  if (callId === undefined) throw new Error("no client call in the transcript");
  unwrap(await lane.submitToolResult(operationId, callId, CLIENT_ANSWER));
}

const runTools = async (rig: Attached, lane: AgentLane, name: string, definition: Parameters<typeof defineTool>[2]): Promise<void> => {
  await defineTool(rig.session, name, definition);
  unwrap(await lane.setActiveTools([name]));
};

/** A run whose first response calls one tool, defined in the session (a `safe` one) and active on the lane. */
function toolRun(call: ScriptToolCall, definition: { kind: "builtin" | "client"; description: string }, finish: EngineIntent["finish"]): EngineIntent {
  return {
    steps: [{ toolCalls: [call] }, { text: `after ${call.name}` }],
    settings: RETRY,
    history: (rig, lane) => runTools(rig, lane, call.name, { ...definition, parameters: { type: "object" }, replay: "safe" }),
    start: prompt,
    finish,
    tools: testTools({}),
    responseAt: 0,
  };
}

/** A run after one earlier turn ("one" → the first step) whose own response (step 1) leads to a compaction (step 2). */
function inRunCompaction(steps: ScriptStep[], settings: HarnessSettingsPatch): EngineIntent {
  return {
    steps,
    settings,
    history: async (_rig, lane) => void unwrap(await lane.prompt("one")),
    start: prompt,
    finish: drive,
    responseAt: 1,
    summary: { at: 2, hook: "before_compaction", step: "compaction" },
  };
}

export const ENGINE_INTENTS: Partial<Record<IntentName, EngineIntent>> = {
  prompt: { steps: [{ text: "the answer" }], settings: RETRY, history: nothing, start: prompt, finish: drive, responseAt: 0 },
  "tool:builtin:safe": toolRun({ name: "values_set", arguments: { namespace: "app", key: "answer", value: 42 } }, { kind: "builtin", description: "writes a value" }, drive),
  client: toolRun({ name: "ask_user", arguments: {} }, { kind: "client", description: "asks the user" }, answerClient),
  "compaction:manual": {
    steps: [{ text: "a" }, { text: "b" }, { text: "SUMMARY" }],
    settings: KEEP_LAST_TURN,
    history: converse,
    start: async (_rig, lane) => unwrap(await lane.accept({ kind: "compaction" })).operationId,
    finish: drive,
    summary: { at: 2, hook: "before_compaction", step: "compaction" },
  },
  "compaction:threshold": { ...inRunCompaction([small("a"), big("b"), { text: "SUMMARY" }], THRESHOLD), noSteer: true },
  "compaction:overflow": inRunCompaction([small("a"), { overflow: true }, { text: "SUMMARY" }, small("c")], KEEP_LAST_TURN),
  "navigation:plain": {
    steps: [{ text: "a" }, { text: "b" }],
    settings: RETRY,
    history: converse,
    start: async (_rig, lane) => unwrap(await lane.accept({ kind: "navigation", targetId: forkPoint(lane) })).operationId,
    finish: drive,
  },
  "navigation:summarized": {
    steps: [{ text: "a" }, { text: "b" }, { text: "SUMMARY" }],
    settings: RETRY,
    history: converse,
    start: async (_rig, lane) => unwrap(await lane.accept({ kind: "navigation", targetId: forkPoint(lane), summarize: true })).operationId,
    finish: drive,
    summary: { at: 2, hook: "before_navigation", step: "branch_summary" },
  },
  deferred: { steps: [later({ text: "the ready answer" })], settings: RETRY, history: nothing, start: prompt, finish: pollToEnd, responseAt: 0 },
};

/**
 * The builtin member where the kill must fall inside the tool's own effect (tools × during_effect):
 * `wait`, which stores a progress checkpoint every second and memoises its start, so the kill lands
 * after durable progress and the safe replay resumes it. Elsewhere the builtin member is
 * `values_set` (instant, an idempotent write: safe), which keeps the matrix fast.
 */
const BUILTIN_WAIT = toolRun({ name: "wait", arguments: { seconds: WAIT_SECONDS } }, { kind: "builtin", description: "waits" }, drive);

/** The first assistant answer ("a"): where the navigations go back to. */
function forkPoint(lane: AgentLane): string {
  const first = transcriptOf(lane).find((entry) => entry.type === "message" && entry.message.role === "assistant");
  if (!first) throw new Error("no history to navigate to");
  return first.id;
}

export function engineIntent(name: IntentName, inEffect = false): EngineIntent {
  if (name === "tool:builtin:safe" && inEffect) return BUILTIN_WAIT;
  const intent = ENGINE_INTENTS[name];
  if (!intent) throw new Error(`${name} is not an engine intent`);
  return intent;
}
