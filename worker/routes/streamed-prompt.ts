import type { Context } from "hono";
import type { BusyAdmission } from "../../durable-objects/session/session-operations.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { Interrupted } from "../../schema/lane-answers.ts";
import { PromptConvenienceSchema } from "../../schema/lane-api.ts";
import { SSE_HEARTBEAT_DEFAULT_SECONDS } from "../../schema/watch-resume.ts";
import { toWire, type Wire } from "../../schema/wire.ts";
import type { AppEnv } from "../env.ts";
import { replyValue } from "../http-error.ts";
import { idempotencyScope, replayInstead } from "../middleware/idempotency.ts";
import { jsonBody, readBoundedText } from "../validate.ts";
import { SSE_HEADERS, sseRelay } from "../watch/sse-relay.ts";
import { closeQuietly, openWatchSocket } from "../watch/watch-upgrade.ts";
import { handedWithoutSlot, withOpenOperation, type AdmittingScope } from "./open-operations.ts";
import type { sessionStub } from "../env.ts";

/** How long one streamed prompt follows its run before ending with the `{ operationId }` answer. */
const STREAM_FOR_MS = 30 * 60_000;
/** Each wait for the run's answer (the session's bound on one wait). */
const WAIT_STEP_MS = 60_000;

/** `Accept: text/event-stream`, or `"stream": true` in the body (read, bounded, never refused here). */
export async function streamRequested(c: Context<AppEnv>): Promise<boolean> {
  if (c.req.header("accept")?.includes("text/event-stream")) return true;
  try {
    const body: unknown = JSON.parse(await readBoundedText(c));
    return typeof body === "object" && body !== null && "stream" in body && body.stream === true;
  } catch {
    // Whatever is wrong with the body, the JSON route answers it (after authentication).
    return false;
  }
}

/**
 * `POST …/prompt` streamed (spec "Streaming over HTTP"): the run's events as Server-Sent Events
 * from its acceptance to its settlement, then a `result` event with the body the JSON answer has
 * (the settled record with its messages, a suspended run, or `{ operationId }` when the stream's
 * time ran out). The lane is read through a relay watch socket opened before the acceptance, so
 * no event of the run is missed (worker/watch/sse-relay.ts); only the run's own events and the
 * lane-wide ones (queue, stats) are relayed. The acceptance is the JSON route's: the same
 * open-operation slot and idempotency (a repeat with the same `Idempotency-Key` answers
 * `202 { operationId }`, the run it started). A prompt handed to a running operation (`ifBusy`
 * steer/followUp) streams just its `result`.
 */
export async function streamedPrompt(c: Context<AppEnv>, stub: ReturnType<typeof sessionStub>, scope: AdmittingScope): Promise<Response> {
  // A steer or follow-up a running run takes needs no slot, and streams just its `result`.
  const handed = await handedWithoutSlot(c, () => jsonBody(c, PromptConvenienceSchema), ({ prompt, images, operationId, deferred, ifBusy }) => {
    if (ifBusy !== "steer" && ifBusy !== "followUp") return undefined;
    const request = { kind: "prompt" as const, prompt, ...(images && { images }), ...(operationId !== undefined && { operationId }), ...(deferred !== undefined && { deferred }) };
    return () => stub.handToRunningRun(scope.lane, toWire(request), ifBusy, idempotencyScope(c));
  });
  if (handed !== undefined) {
    // A repeat with the same Idempotency-Key answers 202 { operationId } (docs/api-watch.md), not this stream.
    replayInstead(c, 202, { operationId: handed.operationId });
    return streamResponse(c, new Blob([resultEvent(handed)]).stream());
  }
  let relay: WebSocket | undefined;
  let admission: BusyAdmission;
  try {
    admission = await withOpenOperation(
      c,
      scope,
      () => jsonBody(c, PromptConvenienceSchema),
      async ({ prompt, images, operationId, deferred, ifBusy }): Promise<Wire<RpcResult<BusyAdmission>>> => {
        relay = (await openWatchSocket(c, scope.sessionId, { kind: "lane", lane: scope.lane }, { resume: "new", batch: true })).webSocket;
        const request = { kind: "prompt" as const, prompt, ...(images && { images }), ...(operationId !== undefined && { operationId }), ...(deferred !== undefined && { deferred }) };
        if (ifBusy !== undefined && ifBusy !== "reject") return stub.acceptWhileBusy(scope.lane, toWire(request), ifBusy, idempotencyScope(c));
        return stub.acceptOperation(scope.lane, toWire(request), idempotencyScope(c));
      },
      (value) => ("queued" in value ? undefined : value.operationId),
    );
  } catch (error) {
    closeQuietly(relay);
    throw error;
  }
  if (!relay) throw new Error("The relay socket was not opened");
  const heartbeatMs = SSE_HEARTBEAT_DEFAULT_SECONDS * 1000;
  if ("queued" in admission) {
    replayInstead(c, 202, { operationId: admission.operationId });
    const body = sseRelay(relay, { heartbeatMs, snapshots: false, events: () => false, finish: Promise.resolve(resultEvent(admission)) });
    return streamResponse(c, body);
  }
  const { operationId } = admission;
  // What an interrupt drained from the run it aborted exists nowhere else: the result carries it, as the JSON answer does.
  const interrupted = admission.interrupted && { interrupted: admission.interrupted };
  replayInstead(c, 202, { operationId });
  let ended!: () => void;
  const runEnded = new Promise<void>((resolve) => (ended = resolve));
  // An event names its run by `runId` (an abort by `operationId`): another run's is not relayed.
  // Between its run_start and its run_end the lane's entries and their usage are this run's; before
  // it starts (a pending run waits behind another) they are another run's, and carry no run id.
  let running = false;
  const events = (event: { type?: unknown; runId?: unknown; operationId?: unknown }): boolean => {
    const named = event.runId ?? event.operationId;
    if (named === operationId) {
      if (event.type === "run_start") running = true;
      if (event.type === "run_end") {
        running = false;
        ended();
      }
      return true;
    }
    if (named !== undefined) return false;
    return (event.type !== "entry_added" && event.type !== "usage") || running;
  };
  // A repeat of a keyed request may answer a run the first request accepted, which may have ended
  // before this relay opened: its run_end will never come, so the relay catching up stands in for it.
  const relayed = idempotencyScope(c) === undefined ? runEnded : Promise.race([runEnded, relayCaughtUp(relay)]);
  const body = sseRelay(relay, { heartbeatMs, snapshots: false, events, finish: answer(stub, scope.lane, operationId, relayed, interrupted) });
  return streamResponse(c, body);
}

/** The run's answer as the JSON route words it, once the run's end was relayed (so it comes last) or `relayed` says it never will be. */
async function answer(stub: ReturnType<typeof sessionStub>, lane: string, operationId: string, relayed: Promise<void>, interrupted: { interrupted: Interrupted } | undefined): Promise<string> {
  const deadline = Date.now() + STREAM_FOR_MS;
  for (;;) {
    const outcome = replyValue(await stub.promptOutcome(lane, operationId, Math.min(WAIT_STEP_MS, Math.max(0, deadline - Date.now()))));
    if (outcome.state === "settled") {
      await relayed;
      return resultEvent({ ...outcome.result, ...interrupted });
    }
    if (outcome.state === "suspended") return resultEvent({ status: "suspended", operationId, deferred: outcome.deferred, ...interrupted });
    if (Date.now() >= deadline) return resultEvent({ operationId, ...interrupted });
  }
}

/**
 * Resolves once every event the lane numbered so far has reached the relay: a resnapshot the relay
 * asks for comes after all of them (the hub sends what it numbered before a snapshot first,
 * watch-hub.ts). The snapshot itself is not relayed (`snapshots: false`). A closed socket ends the
 * stream anyway.
 */
function relayCaughtUp(ws: WebSocket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      ws.removeEventListener("message", onMessage);
      ws.removeEventListener("close", done);
      resolve();
    };
    // Frames are serialized with `type` first (watch-frames.ts outgoing): no snapshot is parsed here.
    const onMessage = ({ data }: MessageEvent) => {
      if (typeof data === "string" && data.startsWith('{"type":"snapshot"')) done();
    };
    ws.addEventListener("message", onMessage);
    ws.addEventListener("close", done);
    try {
      ws.send(JSON.stringify({ type: "resnapshot" }));
    } catch {
      done();
    }
  });
}

function resultEvent(body: unknown): string {
  return `event: result\ndata: ${JSON.stringify(body)}\n\n`;
}

function streamResponse(c: Context<AppEnv>, body: ReadableStream<Uint8Array>): Response {
  return c.body(body, 200, SSE_HEADERS);
}
