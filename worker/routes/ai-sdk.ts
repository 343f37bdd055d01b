import { Hono, type Context } from "hono";
import { AiSdkChatRequestSchema, UI_MESSAGE_STREAM_HEADER, type UiChunk } from "../../schema/ai-sdk.ts";
import { IdSchema } from "../../schema/api.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import type { PromptAnswer } from "../../schema/lane-answers.ts";
import { toWire, type Wire } from "../../schema/wire.ts";
import { sha256Hex } from "../../durable-objects/tenant/tenant-object.ts";
import type { BusyAdmission } from "../../durable-objects/session/session-operations.ts";
import { AnswerStream, type AnswerStreamOptions } from "../ai-sdk/answer-stream.ts";
import { chatAction, type ChatAction, type PromptAction } from "../ai-sdk/chat-request.ts";
import { entriesAfter, liveRun, settledTranscript, uiMessagesOf } from "../ai-sdk/ui-messages.ts";
import type { AppContext, AppEnv, sessionStub } from "../env.ts";
import { fail, HttpFailure, replyValue } from "../http-error.ts";
import { callerOf, requireTenantWithReservation } from "../middleware/auth.ts";
import { jsonBody, pathParam } from "../validate.ts";
import { SSE_HEARTBEAT_DEFAULT_SECONDS } from "../../schema/watch-resume.ts";
import { SSE_HEADERS, sseRelay, type RelayFrame } from "../watch/sse-relay.ts";
import { closeQuietly, openWatchSocket } from "../watch/watch-upgrade.ts";
import { laneTarget } from "./lane-target.ts";
import { admittingLane, withOpenOperation, type AdmittingScope } from "./open-operations.ts";

// The AI SDK's chat protocol on a lane (spec/API.md "AI SDK compatibility", docs/ai-sdk.md): a page
// using `useChat` with the standard `DefaultChatTransport` points `api` at
// `/v1/sessions/{sid}/lanes/{lane}/ai-sdk` and works unchanged. Underneath, each prompt is an
// ordinary durable run of the lane; the answer is its watch events translated as they come
// (worker/ai-sdk/answer-stream.ts), relayed over a hibernatable watch socket like every SSE stream.

type SessionStub = ReturnType<typeof sessionStub>;
/** The answer to one chat request: the run it started, or the run an earlier send of the same message started. */
type ChatAdmission = BusyAdmission | { repeatOf: string };

/** How long a regenerate request waits for its navigation to settle. */
const NAVIGATION_WAIT_MS = 30_000;
const DONE = "data: [DONE]\n\n";

/** `POST …/ai-sdk` takes an open-operation slot when it prompts, so lanes.ts mounts it before its `requireTenant`. */
export const acceptingAiSdkRoutes = new Hono<AppEnv>().post("/:lane/ai-sdk", requireTenantWithReservation, async (c) => {
  const { stub, ...scope } = await admittingLane(c);
  // The body is read first (what it asks decides whether a slot is reserved), but a refusal of it
  // is answered only after the key is verified: 401 comes before 400.
  let action: ChatAction;
  try {
    action = chatAction(await jsonBody(c, AiSdkChatRequestSchema));
  } catch (error) {
    if (error instanceof HttpFailure) await callerOf(c);
    throw error;
  }
  switch (action.kind) {
    case "prompt":
      return promptAnswer(c, stub, scope, action);
    case "tool-results":
      await callerOf(c);
      return toolResultsAnswer(c, stub, scope, action);
    case "regenerate":
      await callerOf(c);
      return regenerateAnswer(c, stub, scope, action.asked);
  }
});

/** The reading routes, behind lanes.ts's authentication. */
export const aiSdkRoutes = new Hono<AppEnv>()
  // The page's initial messages: the lane's transcript (its newest part) as `UIMessage[]`.
  .get("/:lane/ai-sdk/messages", async (c) => {
    const { stub, lane } = laneTarget(c);
    const snapshot = replyValue(await stub.laneSnapshot(lane));
    return c.json(uiMessagesOf(settledTranscript(snapshot)));
  })
  // The transport's resumption: the live run's answer from its start, then live; 204 when none runs.
  .get("/:lane/ai-sdk/:chatId/stream", async (c) => {
    const { stub, lane, sessionId } = laneTarget(c);
    if (pathParam(c, "chatId", IdSchema) !== sessionId) throw fail("NotFound", "The chat id of a lane's stream is its session id");
    const run = liveRun(replyValue(await stub.laneSnapshot(lane)));
    if (!run) return c.body(null, 204);
    return followRun(c, stub, { sessionId, lane }, new AnswerStream(run.id));
  });

/**
 * A prompt: exactly once per user message. The message's id is kept with the run it started (the
 * session's idempotency store), so sending the same message again (a retry, a second tab) follows
 * that run instead of starting another; the same id with other content is 422 IdempotencyConflict.
 * The id is checked before a slot is reserved: a repeat opens nothing, and the run it follows may
 * hold the tenant's last slot. A steer or follow-up a running run takes opens no operation either,
 * so it is first handed to that run with no slot reserved (spec "Prompt while busy"), as on
 * `POST …/prompt`; only when no run takes it (an idle lane, a compaction or navigation current) is
 * a slot reserved, as for any other prompt.
 */
async function promptAnswer(c: AppContext, stub: SessionStub, scope: AdmittingScope, action: PromptAction): Promise<Response> {
  // The message id is the acceptance's receipt too: a repeat after a crash finds its run.
  const receipt = await messageReceipt(scope.lane, action);
  const { key, requestHash } = receipt;
  const { prompt, images, ifBusy } = action;
  const request = toWire({ kind: "prompt" as const, prompt, ...(images.length > 0 && { images }) });
  let relay: WebSocket | undefined;
  let claimed = false;
  /** Claims the message id (a repeat answers the run its first send started), then opens the relay before anything is accepted. */
  const claimMessage = async (): Promise<{ repeatOf: string } | undefined> => {
    const claim = await claimOf(stub, receipt, action.messageId);
    if (claim !== "claimed") return claim;
    claimed = true;
    relay = await relaySocket(c, scope.sessionId, scope.lane);
    return undefined;
  };
  let admission: ChatAdmission | undefined;
  try {
    await callerOf(c);
    admission = await claimMessage();
    if (!admission && (ifBusy === "steer" || ifBusy === "followUp")) admission = replyValue(await stub.handToRunningRun(scope.lane, request, ifBusy, receipt)) ?? undefined;
    admission ??= await withOpenOperation(
      c,
      scope,
      async () => action,
      async (): Promise<Wire<RpcResult<BusyAdmission>>> => {
        if (ifBusy !== undefined && ifBusy !== "reject") return stub.acceptWhileBusy(scope.lane, request, ifBusy, receipt);
        return stub.acceptOperation(scope.lane, request, receipt);
      },
      (value) => ("queued" in value ? undefined : value.operationId),
    );
  } catch (error) {
    closeQuietly(relay);
    if (claimed) await stub.idempotencyComplete(key, requestHash, null).catch(() => undefined);
    throw error;
  }
  if ("repeatOf" in admission) return repeatAnswer(c, stub, scope, admission.repeatOf);
  const { operationId } = admission;
  if (claimed) await stub.idempotencyComplete(key, requestHash, { status: 202, body: JSON.stringify({ operationId }) }).catch(() => undefined);
  if (!relay) throw new Error("The relay socket was not opened");
  // A prompt handed to the running operation (steer, followUp) is answered by that run's stream.
  return relayAnswer(c, relay, new AnswerStream(operationId), false);
}

/** Where a message's id is kept with the run its send started: the session's idempotency store. */
async function messageReceipt(lane: string, action: PromptAction): Promise<{ key: string; requestHash: string }> {
  return { key: `ai-sdk:${lane}:${action.messageId}`, requestHash: await sha256Hex(JSON.stringify({ prompt: action.prompt, images: action.images })) };
}

/** Claims a message's id: "claimed" when it is new here, the run an earlier send started, or the refusal of the states between. */
async function claimOf(stub: SessionStub, { key, requestHash }: { key: string; requestHash: string }, messageId: string): Promise<"claimed" | { repeatOf: string }> {
  const claim = await stub.idempotencyClaim(key, requestHash);
  if (claim.state === "no_session") throw fail("SessionNotFound", "Session not found");
  if (claim.state === "conflict") throw fail("IdempotencyConflict", `Message ${messageId} was sent before with other content`);
  if (claim.state === "in_progress") throw fail("IdempotencyInProgress", `Message ${messageId} is still being accepted; retry in ${claim.retryAfterSeconds} s`, { retryAfterSeconds: claim.retryAfterSeconds });
  if (claim.state === "replay") return { repeatOf: repeatedOperation(claim.body) };
  return "claimed";
}

function repeatedOperation(body: string): string {
  const parsed: unknown = JSON.parse(body);
  if (typeof parsed === "object" && parsed !== null && "operationId" in parsed && typeof parsed.operationId === "string") return parsed.operationId;
  throw new Error("A remembered chat prompt names no operation");
}

/** The run an earlier send of this message started: its answer from the start, live or settled. */
async function repeatAnswer(c: AppContext, stub: SessionStub, scope: AdmittingScope, operationId: string): Promise<Response> {
  const outcome = replyValue(await stub.promptOutcome(scope.lane, operationId, 0));
  if (outcome.state === "settled") return streamResponse(c, await settledAnswer(stub, scope.lane, outcome.result));
  return followRun(c, stub, scope, new AnswerStream(operationId));
}

/**
 * A settled run's whole answer, from its record, under the message id `…/messages` gives it (its
 * first assistant entry, when the lane's transcript still holds its start).
 */
async function settledAnswer(stub: SessionStub, lane: string, result: PromptAnswer): Promise<string> {
  const { operationId, messages, status, error, fromTipId } = result;
  const added = entriesAfter(replyValue(await stub.laneSnapshot(lane)).transcript, fromTipId);
  const messageId = added?.find((entry) => entry.type === "message" && entry.message.role === "assistant")?.id;
  return sse(new AnswerStream(operationId, messageId === undefined ? {} : { messageId }).replaySettled(messages, status, error?.message)) + DONE;
}

/**
 * Client-tool results: the page's outputs for the calls the lane's run waits on are posted to it
 * (other tool parts are the server's, already done), then the same assistant message continues.
 */
async function toolResultsAnswer(c: AppContext, stub: SessionStub, { sessionId, lane }: AdmittingScope, action: Extract<ChatAction, { kind: "tool-results" }>): Promise<Response> {
  const relay = await relaySocket(c, sessionId, lane);
  try {
    const run = liveRun(replyValue(await stub.laneSnapshot(lane)));
    const options: AnswerStreamOptions = { messageId: action.messageId, firstStep: action.steps };
    if (!run) {
      closeQuietly(relay);
      return streamResponse(c, sse(new AnswerStream("", options).close("No run waits for these tool results")) + DONE);
    }
    const waiting = new Set(run.runningTools.filter((row) => row.status === "running" && row.executor === "client").map((row) => row.toolCallId));
    for (const { toolCallId, result } of action.results) {
      if (waiting.has(toolCallId)) replyValue(await stub.submitToolResult(lane, run.id, toolCallId, toWire(result)));
    }
    return relayAnswer(c, relay, new AnswerStream(run.id, options), false);
  } catch (error) {
    closeQuietly(relay);
    throw error;
  }
}

/**
 * `trigger: "regenerate-message"` (the hook's `regenerate()`): a new answer to the newest user
 * message the page sends. Where the lane took that message (an entry of its transcript, a page
 * loaded from `…/messages`; or the run its send started, by the message's id), the lane first
 * moves back to just before it: the old answer stays in the session's tree, and the lane's
 * conversation is what the page now shows. A message the lane never took (its send was refused)
 * is simply sent.
 */
async function regenerateAnswer(c: AppContext, stub: SessionStub, scope: AdmittingScope, asked: PromptAction): Promise<Response> {
  const target = await regenerationTarget(stub, scope.lane, asked);
  if (target === undefined) return promptAnswer(c, stub, scope, asked);
  // The navigation's slot is given back as soon as it settled (not kept by the session), so the
  // prompt after it finds it free, also at a quota of one.
  const navigated = await withOpenOperation(
    c,
    scope,
    async () => undefined,
    // Alone: input queued on the lane goes with the regenerated prompt, not into a run of its own.
    () => stub.navigateAlone(scope.lane, toWire({ kind: "navigation" as const, targetId: target.parentId }), NAVIGATION_WAIT_MS),
    (value) => (value.navigation.state === "settled" ? undefined : value.navigation.operationId),
  );
  if (navigated.navigation.state !== "settled") throw fail("Overloaded", "The lane did not move back in time; retry");
  if (navigated.navigation.result.status !== "completed") throw fail("LaneBusy", "The lane could not move back to regenerate the answer");
  const messageId = `regenerate:${target.id}:${navigated.navigation.result.operationId}`;
  return promptAnswer(c, stub, scope, { ...asked, messageId });
}

/**
 * Where the lane took the page's message: its entry (the id `…/messages` gave it), or the start of
 * the run its send started (the message's id is kept with that run). Undefined when it never took
 * it. The run must have ended: its answer is the one asked again.
 */
async function regenerationTarget(stub: SessionStub, lane: string, asked: PromptAction): Promise<{ id: string; parentId: string | null } | undefined> {
  const entry = replyValue(await stub.laneSnapshot(lane)).transcript.find((item) => item.id === asked.messageId && item.type === "message" && item.message.role === "user");
  if (entry) return { id: entry.id, parentId: entry.parentId };
  const receipt = await messageReceipt(lane, asked);
  const claim = await claimOf(stub, receipt, asked.messageId);
  if (claim === "claimed") {
    // Only a look: the send that follows claims the id again.
    await stub.idempotencyComplete(receipt.key, receipt.requestHash, null);
    return undefined;
  }
  const operationId = claim.repeatOf;
  const outcome = replyValue(await stub.promptOutcome(lane, operationId, 0));
  if (outcome.state !== "settled") throw fail("LaneBusy", "The answer to regenerate is still running");
  return { id: operationId, parentId: outcome.result.fromTipId };
}

/** Follows a run through a new relay socket: its answer so far first (from the socket's snapshot), then live. */
async function followRun(c: AppContext, stub: SessionStub, { sessionId, lane }: Pick<AdmittingScope, "sessionId" | "lane">, answer: AnswerStream): Promise<Response> {
  const relay = await relaySocket(c, sessionId, lane);
  return relayAnswer(c, relay, answer, true, async () => {
    const outcome = replyValue(await stub.promptOutcome(lane, answer.operationId, 0));
    // The run ended before the socket's snapshot: its answer from its record.
    if (outcome.state === "settled") return settledAnswer(stub, lane, outcome.result);
    // Not started at the snapshot (a pending run waiting its turn) or started since: its events,
    // all after the snapshot, come on the relay and end the answer.
    if (outcome.state === "pending") return undefined;
    return sse(answer.close("The run is not live")) + DONE;
  });
}

/** A relay watch socket of the lane, from now on (its first message is a snapshot), in batch frames. */
async function relaySocket(c: AppContext, sessionId: string, lane: string): Promise<WebSocket> {
  return (await openWatchSocket(c, sessionId, { kind: "lane", lane }, { resume: "new", batch: true })).webSocket;
}

/** The relay socket as the UI-message stream of one run's answer, ended after its last chunk. */
function relayAnswer(c: AppContext, relay: WebSocket, answer: AnswerStream, replay: boolean, ended?: () => Promise<string | undefined>): Response {
  let settle!: (text: string) => void;
  const finish = new Promise<string>((resolve) => (settle = resolve));
  let snapshotSeen = false;
  const render = (frame: RelayFrame): string => {
    if (frame.type === "snapshot") {
      if (!replay || snapshotSeen) return "";
      snapshotSeen = true;
      const text = sse(answer.replay(snapshotOf(frame)));
      // Not following the run at the snapshot: `ended` answers whether it is over (undefined: still to come).
      if (!answer.following && ended) {
        const failed = () => settle(sse(answer.close("The run's answer could not be read")) + DONE);
        void ended().then((last) => last !== undefined && settle(last), failed);
      } else if (answer.done) settle(DONE);
      return text;
    }
    if (!frame.event) return "";
    const text = sse(answer.event(frame.event));
    if (answer.done) settle(DONE);
    return text;
  };
  const body = sseRelay(relay, {
    heartbeatMs: SSE_HEARTBEAT_DEFAULT_SECONDS * 1000,
    snapshots: replay,
    render,
    finish,
    closing: (code, reason) => sse(answer.close(`The stream was closed (${code}): ${reason}`)) + DONE,
  });
  return streamResponse(c, body);
}

function snapshotOf(frame: RelayFrame): LaneSnapshot {
  if (!frame.snapshot) throw new Error("A snapshot frame without a snapshot");
  return frame.snapshot;
}

function sse(chunks: readonly UiChunk[]): string {
  return chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join("");
}

function streamResponse(c: Context<AppEnv>, body: ReadableStream<Uint8Array> | string): Response {
  return c.body(body, 200, {
    ...SSE_HEADERS,
    [UI_MESSAGE_STREAM_HEADER.name]: UI_MESSAGE_STREAM_HEADER.value,
  });
}

