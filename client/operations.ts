import type { OperationResultRecord } from "../schema/lane.ts";
import type { DeferredHandle, ImageContent } from "../schema/messages.ts";
import type { DeferredMode } from "../schema/settings.ts";
import { path, waitSeconds, type CallOptions, type HttpClient, type HttpResponse } from "./http.ts";
import { lanePath } from "./lanes.ts";
import type { IfBusy } from "../schema/lane-api.ts";
import type { Interrupted, QueuedPrompt } from "../schema/lane-answers.ts";
import type { AbortOutcome, AbortRequestResult, AcceptedOperation, ConvenienceOutcome, OperationRequestBody, OperationView, PendingRun, PromptAnswer, PromptInput, PromptOutcome } from "./types.ts";

/** Waiting options: seconds, at most 60 (decimals allowed). */
export interface WaitOptions extends CallOptions {
  wait?: number;
}

export interface PromptOptions extends CallOptions {
  images?: ImageContent[];
  /**
   * What to do when the lane is busy: `reject` (the default, 409 LaneBusy), `enqueue` (a pending
   * run, answered when it settles), `interrupt` (abort the current run, then this one; the answer
   * adds `interrupted`), `steer` / `followUp` (hand the prompt to the running operation: `queued`).
   */
  ifBusy?: IfBusy;
  /** Seconds to wait for the result (server default 60, at most 60). */
  wait?: number;
  /** A fresh UUIDv7 chosen by the caller. */
  operationId?: string;
  /**
   * Ask for a deferred answer (a background response or batch; the run suspends until it is
   * ready), or `false` for a live one whatever the session's `streamOptions.deferred` says.
   */
  deferred?: DeferredMode;
}

/**
 * Operations of a lane: the primitives (spec/API.md "Operations: primitives") and the prompt,
 * abort and resume conveniences. Acceptance runs no work; the session object drives the operation.
 */
export class OperationsApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /**
   * `POST …/operations` OperationRequest → 202 `{ operationId, kind, startedAt }` (409 LaneBusy).
   * A prompt with `ifBusy` on a busy lane answers its pending run (`state: "pending"`, `position`)
   * or, for `steer`/`followUp`, the running operation it was handed to (`queued`). Accepts `idempotencyKey`.
   */
  accept(sessionId: string, lane: string, request: OperationRequestBody, options: CallOptions = {}): Promise<AcceptedOperation> {
    return this.http.json({ ...options, method: "POST", path: lanePath(sessionId, lane, "/operations"), body: request });
  }

  /** `GET …/pending`: the lane's pending runs, in the order they will start. */
  async pending(sessionId: string, lane: string, options: CallOptions = {}): Promise<PendingRun[]> {
    const body = await this.http.json<{ items: PendingRun[] }>({ ...options, method: "GET", path: lanePath(sessionId, lane, "/pending") });
    return body.items;
  }

  /**
   * `GET …/operations/{opId}?wait=` → settled record or the active view; `wait` long-polls until
   * settled or a durable wait. 404 OperationMismatch for an id neither current nor settled.
   */
  get(sessionId: string, lane: string, operationId: string, options: WaitOptions = {}): Promise<OperationView> {
    const { wait, ...call } = options;
    return this.http.json({ ...call, method: "GET", path: lanePath(sessionId, lane, `/operations${path(operationId)}`), query: { wait: waitSeconds(wait) } });
  }

  /** `POST …/operations/{opId}/abort` (requestAbort) → `{ operationId, newlyRequested, steer, followUp }`; 409 for a stale id. */
  abort(sessionId: string, lane: string, operationId: string, options: CallOptions = {}): Promise<AbortRequestResult> {
    return this.http.json({ ...options, method: "POST", path: lanePath(sessionId, lane, `/operations${path(operationId)}/abort`) });
  }

  /** `POST …/operations/{opId}/resume?wait=`: one deferred poll permit / drive now; answers like `get`. */
  resume(sessionId: string, lane: string, operationId: string, options: WaitOptions = {}): Promise<OperationView> {
    const { wait, ...call } = options;
    return this.http.json({ ...call, method: "POST", path: lanePath(sessionId, lane, `/operations${path(operationId)}/resume`), query: { wait: waitSeconds(wait) } });
  }

  /**
   * `POST …/prompt` `{ prompt, images?, wait?, operationId?, deferred? }`: accept and wait. Settled → the record
   * with the messages the run appended (`result.messages`, the final assistant message last); a
   * deferred run → `suspended`; the wait ran out → `pending` with the id (poll it with `get`).
   * Accepts `idempotencyKey`.
   */
  async prompt(sessionId: string, lane: string, prompt: PromptInput, options: PromptOptions = {}): Promise<PromptOutcome> {
    const { images, wait, operationId, deferred, ifBusy, ...call } = options;
    const body = {
      prompt,
      ...(images !== undefined && { images }),
      ...(wait !== undefined && { wait }),
      ...(operationId !== undefined && { operationId }),
      ...(deferred !== undefined && { deferred }),
      ...(ifBusy !== undefined && { ifBusy }),
    };
    const response = await this.http.send<ConvenienceBody<PromptAnswer> | QueuedPrompt>({ ...call, method: "POST", path: lanePath(sessionId, lane, "/prompt"), body });
    const answer = response.body;
    if ("queued" in answer) return { state: "queued", ...answer };
    const outcome = convenienceOutcome({ ...response, body: answer });
    // What an interrupt drained rides on every answer: in a settled record, beside a pending or suspended one.
    return outcome.state !== "settled" && "interrupted" in answer && answer.interrupted ? { ...outcome, interrupted: answer.interrupted } : outcome;
  }

  /**
   * `POST …/navigate` `{ targetId, label?, summarize?, customInstructions?, wait?, operationId? }`:
   * moves the lane's tip (null: the root) and waits; with `summarize` it first summarizes the
   * branch it leaves into a branch-summary entry under the target. Settled → the navigation's record and, when queued input was waiting, the
   * continuation run's outcome (`run`, like `prompt`); the wait ran out → `pending` with the id.
   */
  async navigate(sessionId: string, lane: string, targetId: string | null, options: NavigateOptions = {}): Promise<NavigateOutcome> {
    const { label, summarize, customInstructions, wait, operationId, ...call } = options;
    const body = {
      targetId,
      ...(label !== undefined && { label }),
      ...(summarize !== undefined && { summarize }),
      ...(customInstructions !== undefined && { customInstructions }),
      ...(wait !== undefined && { wait }),
      ...(operationId !== undefined && { operationId }),
    };
    const response = await this.http.send<{ navigation: OperationResultRecord; run?: ConvenienceBody<PromptAnswer> } | { operationId: string }>({
      ...call,
      method: "POST",
      path: lanePath(sessionId, lane, "/navigate"),
      body,
    });
    const answer = response.body;
    if (response.status === 202 || !("navigation" in answer)) return { state: "pending", operationId: "operationId" in answer ? answer.operationId : "" };
    return {
      state: "settled",
      navigation: answer.navigation,
      ...(answer.run !== undefined && { run: outcomeOfBody(answer.run, false) }),
    };
  }

  /**
   * `POST …/compact` `{ customInstructions?, wait?, operationId? }`: summarizes the lane's older
   * context into a compaction entry on its tip and waits (422 NothingToCompact when everything
   * fits in the kept recent part). Settled → the compaction's record and, when queued input was
   * waiting, the continuation run's outcome (`run`, like `prompt`); the wait ran out → `pending`.
   */
  async compact(sessionId: string, lane: string, options: CompactOptions = {}): Promise<CompactOutcome> {
    const { customInstructions, wait, operationId, ...call } = options;
    const body = { ...(customInstructions !== undefined && { customInstructions }), ...(wait !== undefined && { wait }), ...(operationId !== undefined && { operationId }) };
    const response = await this.http.send<{ compaction: OperationResultRecord; run?: ConvenienceBody<PromptAnswer> } | { operationId: string }>({
      ...call,
      method: "POST",
      path: lanePath(sessionId, lane, "/compact"),
      body,
    });
    const answer = response.body;
    if (response.status === 202 || !("compaction" in answer)) return { state: "pending", operationId: "operationId" in answer ? answer.operationId : "" };
    return {
      state: "settled",
      compaction: answer.compaction,
      ...(answer.run !== undefined && { run: outcomeOfBody(answer.run, false) }),
    };
  }

  /** `POST …/abort?wait=`: aborts the current operation (422 NoActiveOperation when idle); `record` once reconciled (default wait 10 s). */
  abortCurrent(sessionId: string, lane: string, options: WaitOptions = {}): Promise<AbortOutcome> {
    const { wait, ...call } = options;
    return this.http.json({ ...call, method: "POST", path: lanePath(sessionId, lane, "/abort"), query: { wait: waitSeconds(wait) } });
  }

  /** `POST …/resume?wait=`: drives the current operation (422 NothingToResume when idle); answers like `prompt`. */
  async resumeCurrent(sessionId: string, lane: string, options: WaitOptions = {}): Promise<ConvenienceOutcome> {
    const { wait, ...call } = options;
    return convenienceOutcome(
      await this.http.send<ConvenienceBody>({ ...call, method: "POST", path: lanePath(sessionId, lane, "/resume"), query: { wait: waitSeconds(wait) } }),
    );
  }
}

export interface NavigateOptions extends CallOptions {
  /** A label for the target entry (not for the root). */
  label?: string;
  /** Summarize the branch the lane leaves into a branch-summary entry under the target. */
  summarize?: boolean;
  /** What that summary should focus on. */
  customInstructions?: string;
  /** Seconds to wait (server default 60, at most 60). */
  wait?: number;
  /** A fresh UUIDv7 chosen by the caller. */
  operationId?: string;
}

/** The navigate convenience: the navigation's record and the continuation run when one started. */
export type NavigateOutcome =
  | { state: "settled"; navigation: OperationResultRecord; run?: ConvenienceOutcome<PromptAnswer> }
  | { state: "pending"; operationId: string };

export interface CompactOptions extends CallOptions {
  /** What the summary should focus on. */
  customInstructions?: string;
  /** Seconds to wait (server default 60, at most 60). */
  wait?: number;
  /** A fresh UUIDv7 chosen by the caller. */
  operationId?: string;
}

/** The compact convenience: the compaction's record and the continuation run when one started. */
export type CompactOutcome =
  | { state: "settled"; compaction: OperationResultRecord; run?: ConvenienceOutcome<PromptAnswer> }
  | { state: "pending"; operationId: string };

/** What the waiting conveniences send: the record (200), a suspended run (200), or the id (202). */
type ConvenienceBody<Settled extends OperationResultRecord = OperationResultRecord> =
  | Settled
  | { status: "suspended"; operationId: string; deferred: DeferredHandle; interrupted?: Interrupted }
  | { operationId: string; interrupted?: Interrupted };

function convenienceOutcome<Settled extends OperationResultRecord>(response: HttpResponse<ConvenienceBody<Settled>>): ConvenienceOutcome<Settled> {
  return outcomeOfBody(response.body, response.status === 202);
}

/** A convenience body as an outcome; `accepted` is a 202 (the wait ran out). */
function outcomeOfBody<Settled extends OperationResultRecord>(body: ConvenienceBody<Settled>, accepted: boolean): ConvenienceOutcome<Settled> {
  if (accepted) return { state: "pending", operationId: body.operationId };
  if ("status" in body && body.status === "suspended") return { state: "suspended", operationId: body.operationId, deferred: body.deferred };
  if ("kind" in body) return { state: "settled", result: body };
  return { state: "pending", operationId: body.operationId };
}
