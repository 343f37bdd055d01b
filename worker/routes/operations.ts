import { Hono, type Context } from "hono";
import type { BusyAdmission, BusyPromptOutcome, ConvenienceOutcome } from "../../durable-objects/session/session-operations.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { Interrupted } from "../../schema/lane-answers.ts";
import type { CompactionRequest, NavigationRequest, OperationRequest } from "../../harness/runtime/acceptance.ts";
import { CompactConvenienceSchema, NavigateConvenienceSchema, OperationRequestSchema, PromptConvenienceSchema, MAX_WAIT_SECONDS, type OperationRequestBody, type PromptConvenience } from "../../schema/lane-api.ts";
import type { DeferredHandle } from "../../schema/messages.ts";
import { toWire, type Wire } from "../../schema/wire.ts";
import type { AppEnv } from "../env.ts";
import { errorResponse, HttpFailure, replyValue } from "../http-error.ts";
import { ClientToolResultSchema, ToolCallIdSchema } from "../../schema/tools.ts";
import { jsonBody, pathParam } from "../validate.ts";
import { laneTarget, pathId, sessionIdempotency, waitMs } from "./lane-target.ts";
import { idempotencyScope } from "../middleware/idempotency.ts";
import { admittingLane, handedWithoutSlot, withHeldSlot, withOpenOperation } from "./open-operations.ts";
import { streamedPrompt, streamRequested } from "./streamed-prompt.ts";
import { requireTenantWithReservation } from "../middleware/auth.ts";

// Operations of a lane (spec/API.md "Operations: primitives" and the prompt/abort/resume
// conveniences), mounted by lanes.ts: the accepting routes with their own authentication, the rest
// behind lanes.ts's. Acceptance runs no work in the request: the object starts the pass itself,
// and a waiting request observes that one pass through an in-object promise bounded by its wait
// (ARCHITECTURE D7).

/** Conveniences wait up to the maximum unless told otherwise; primitives only when asked. */
const CONVENIENCE_WAIT_MS = MAX_WAIT_SECONDS * 1000;
/** The abort convenience waits this long to report the reconciled (aborted) record. */
const ABORT_WAIT_MS = 10_000;

/**
 * The accepting routes take an open-operation slot (open-operations.ts): their key is verified in
 * the same tenant call as the reservation, so lanes.ts mounts them before its `requireTenant`.
 */
export const acceptingOperationRoutes = new Hono<AppEnv>()
  .post("/:lane/operations", requireTenantWithReservation, sessionIdempotency, async (c) => {
    const { stub, ...scope } = await admittingLane(c);
    const handed = await handedWithoutSlot(c, () => jsonBody(c, OperationRequestSchema), (body) => {
      if (body.kind !== "prompt" || (body.ifBusy !== "steer" && body.ifBusy !== "followUp")) return undefined;
      const { ifBusy, ...request } = body;
      return () => stub.handToRunningRun(scope.lane, toWire(request), ifBusy, idempotencyScope(c));
    });
    if (handed !== undefined) return c.json(handed, 202);
    const admission = await withOpenOperation(
      c,
      scope,
      () => jsonBody(c, OperationRequestSchema),
      (body): Promise<Wire<RpcResult<BusyAdmission>>> => {
        // A prompt that may arrive while the lane is busy (spec "Prompt while busy").
        if (body.kind === "prompt" && body.ifBusy !== undefined && body.ifBusy !== "reject") {
          const { ifBusy, ...request } = body;
          return stub.acceptWhileBusy(scope.lane, toWire(request), ifBusy, idempotencyScope(c));
        }
        return stub.acceptOperation(scope.lane, toWire(engineRequest(body)), idempotencyScope(c));
      },
      (value) => ("queued" in value ? undefined : value.operationId),
    );
    return c.json(admission, 202);
  })
  // accept + wait: the settled record with the run's messages, a suspended run, or 202 with the id
  // when the wait ran out. The session takes the reservation over: a settled turn needs no bind.
  .post("/:lane/prompt", requireTenantWithReservation, sessionIdempotency, async (c) => {
    const { stub, ...scope } = await admittingLane(c);
    if (await streamRequested(c)) return streamedPrompt(c, stub, scope);
    const readBody = () => jsonBody(c, PromptConvenienceSchema);
    const promptOf = ({ prompt, images, operationId, deferred }: PromptConvenience) =>
      toWire({ kind: "prompt" as const, prompt, ...(images && { images }), ...(operationId !== undefined && { operationId }), ...(deferred !== undefined && { deferred }) });
    const waitOf = ({ wait }: PromptConvenience) => (wait === undefined ? CONVENIENCE_WAIT_MS : Math.round(wait * 1000));
    // A warm prompt goes straight to the session, on the slot it holds for the lane.
    const onHeldSlot = await withHeldSlot(c, readBody, (body) =>
      body.ifBusy !== undefined && body.ifBusy !== "reject" ? Promise.resolve(null) : stub.acceptAndAwaitOnHeldSlot(scope.lane, promptOf(body), waitOf(body), idempotencyScope(c)),
    );
    if (onHeldSlot !== undefined) return convenience(c, onHeldSlot);
    const handed = await handedWithoutSlot(c, readBody, (body) =>
      body.ifBusy === "steer" || body.ifBusy === "followUp" ? () => stub.handToRunningRun(scope.lane, promptOf(body), body.ifBusy === "steer" ? "steer" : "followUp", idempotencyScope(c)) : undefined,
    );
    if (handed !== undefined) return c.json(handed, 200);
    const outcome = await withOpenOperation(
      c,
      scope,
      readBody,
      (body, handed): Promise<Wire<RpcResult<BusyPromptOutcome>>> => {
        if (body.ifBusy !== undefined && body.ifBusy !== "reject") return stub.promptWhileBusy(scope.lane, promptOf(body), body.ifBusy, waitOf(body), handed, idempotencyScope(c));
        return stub.acceptAndAwait(scope.lane, promptOf(body), waitOf(body), handed, idempotencyScope(c));
      },
      (value) => ("queued" in value ? undefined : operationIdOf(value)),
      (value) => !("queued" in value) && value.state === "settled",
    );
    if ("queued" in outcome) return c.json(outcome, 200);
    return convenience(c, outcome);
  })
  // accept a navigation + wait; then the continuation run when queued input is eligible.
  .post("/:lane/navigate", requireTenantWithReservation, sessionIdempotency, async (c) => {
    const { stub, ...scope } = await admittingLane(c);
    const outcome = await withOpenOperation(
      c,
      scope,
      () => jsonBody(c, NavigateConvenienceSchema),
      ({ wait, ...fields }, handed) => {
        const waitFor = wait === undefined ? CONVENIENCE_WAIT_MS : Math.round(wait * 1000);
        return stub.navigateAndAwait(scope.lane, toWire(navigationRequest({ kind: "navigation", ...fields })), waitFor, idempotencyScope(c), handed);
      },
      (value) => operationIdOf(value.navigation),
      // Settled, the session released the slot (or handed it on to the continuation run).
      (value) => value.navigation.state === "settled",
    );
    if (outcome.navigation.state !== "settled") return convenience(c, outcome.navigation);
    return c.json({ navigation: outcome.navigation.result, ...(outcome.run && { run: convenienceBody(outcome.run) }) }, 200);
  })
  // accept a manual compaction + wait; then the continuation run when queued input is eligible.
  .post("/:lane/compact", requireTenantWithReservation, sessionIdempotency, async (c) => {
    const { stub, ...scope } = await admittingLane(c);
    const outcome = await withOpenOperation(
      c,
      scope,
      () => jsonBody(c, CompactConvenienceSchema),
      ({ wait, customInstructions, operationId }, handed) => {
        const waitFor = wait === undefined ? CONVENIENCE_WAIT_MS : Math.round(wait * 1000);
        return stub.compactAndAwait(scope.lane, toWire(compactionRequest({ kind: "compaction", customInstructions, operationId })), waitFor, idempotencyScope(c), handed);
      },
      (value) => operationIdOf(value.compaction),
      // Settled, the session released the slot (or handed it on to the continuation run).
      (value) => value.compaction.state === "settled",
    );
    if (outcome.compaction.state !== "settled") return convenience(c, outcome.compaction);
    return c.json({ compaction: outcome.compaction.result, ...(outcome.run && { run: convenienceBody(outcome.run) }) }, 200);
  });

export const operationRoutes = new Hono<AppEnv>()
  // The lane's pending runs in line (spec "Prompt while busy"); at most 20, so one page.
  .get("/:lane/pending", async (c) => {
    const { stub, lane } = laneTarget(c);
    return c.json({ items: replyValue(await stub.pendingRuns(lane)) });
  })
  // drive(id) made total; `?wait=` long-polls until settled or a durable wait.
  .get("/:lane/operations/:opId", async (c) => {
    const { stub, lane } = laneTarget(c);
    const operationId = pathId(c, "opId");
    const wait = waitMs(c, 0);
    return unknownIsNotFound(c, await stub.operation(lane, operationId, wait));
  })
  // requestAbort(id): a stale id (not the current operation) is 409 OperationMismatch.
  // With an Idempotency-Key a repeat answers the first answer (the input it handed back included).
  .post("/:lane/operations/:opId/abort", sessionIdempotency, async (c) => {
    const { stub, lane } = laneTarget(c);
    const operationId = pathId(c, "opId");
    return c.json(replyValue(await stub.abortOperation(lane, operationId, idempotencyScope(c))));
  })
  // A client tool's result (ARCHITECTURE D11): 202 once stored; 409 ToolResultConflict for a second
  // post, 404 UnknownToolCall when no client call of that id waits in the operation.
  .post("/:lane/operations/:opId/tool-results/:toolCallId", async (c) => {
    const { stub, lane } = laneTarget(c);
    const operationId = pathId(c, "opId");
    const toolCallId = pathParam(c, "toolCallId", ToolCallIdSchema);
    const result = await jsonBody(c, ClientToolResultSchema);
    return c.json(replyValue(await stub.submitToolResult(lane, operationId, toolCallId, toWire(result))), 202);
  })
  // One deferred poll permit / drive now; answers like GET.
  .post("/:lane/operations/:opId/resume", async (c) => {
    const { stub, lane } = laneTarget(c);
    const operationId = pathId(c, "opId");
    const wait = waitMs(c, 0);
    return unknownIsNotFound(c, await stub.resumeOperation(lane, operationId, wait));
  })
  // requestAbort(current) + the reconciliation pass; 422 NoActiveOperation when idle.
  .post("/:lane/abort", sessionIdempotency, async (c) => {
    const { stub, lane } = laneTarget(c);
    const wait = waitMs(c, ABORT_WAIT_MS);
    return c.json(replyValue(await stub.abortCurrent(lane, wait, idempotencyScope(c))));
  })
  // Drive the current operation with one deferred poll permit; 422 NothingToResume when idle.
  .post("/:lane/resume", async (c) => {
    const { stub, lane } = laneTarget(c);
    const wait = waitMs(c, CONVENIENCE_WAIT_MS);
    return convenience(c, replyValue(await stub.resumeCurrent(lane, wait)));
  });

/** The id a convenience's outcome is about (a settled slot is released by the session, bound or not). */
const operationIdOf = (outcome: ConvenienceOutcome<{ operationId: string }>): string => (outcome.state === "settled" ? outcome.result.operationId : outcome.operationId);

/**
 * The record (with the run's messages, for prompt), a suspended run, or 202 with the id. An
 * interrupting prompt's drained input (`interrupted`) is in every one of them: a settled record
 * carries it already, and it exists nowhere else.
 */
function convenience<Settled extends object>(c: Context<AppEnv>, outcome: ConvenienceOutcome<Settled> & { interrupted?: Interrupted }): Response {
  return c.json(convenienceBody(outcome), outcome.state === "pending" ? 202 : 200);
}

function convenienceBody<Settled extends object>(
  outcome: ConvenienceOutcome<Settled> & { interrupted?: Interrupted },
): Settled | { status: "suspended"; operationId: string; deferred: DeferredHandle; interrupted?: Interrupted } | { operationId: string; interrupted?: Interrupted } {
  const interrupted = outcome.interrupted && { interrupted: outcome.interrupted };
  switch (outcome.state) {
    case "settled":
      return outcome.result;
    case "suspended":
      return { status: "suspended", operationId: outcome.operationId, deferred: outcome.deferred, ...interrupted };
    case "pending":
      return { operationId: outcome.operationId, ...interrupted };
  }
}

/** The engine's request for a validated body. */
function engineRequest(body: OperationRequestBody): OperationRequest {
  if (body.kind === "compaction") return compactionRequest(body);
  if (body.kind === "navigation") return navigationRequest(body);
  return body;
}

function compactionRequest(body: Extract<OperationRequestBody, { kind: "compaction" }>): CompactionRequest {
  return {
    kind: "compaction",
    ...(body.customInstructions !== undefined && { customInstructions: body.customInstructions }),
    ...(body.operationId !== undefined && { operationId: body.operationId }),
  };
}

function navigationRequest(body: Extract<OperationRequestBody, { kind: "navigation" }>): NavigationRequest {
  return {
    kind: "navigation",
    targetId: body.targetId,
    ...(body.label !== undefined && { label: body.label }),
    ...(body.summarize === true && { summarize: true }),
    ...(body.customInstructions !== undefined && { customInstructions: body.customInstructions }),
    ...(body.operationId !== undefined && { operationId: body.operationId }),
  };
}

/**
 * API.md answers GET (and resume) of an id that is neither current nor settled with 404
 * OperationMismatch; only the stale-id abort keeps the code's usual 409.
 */
function unknownIsNotFound<T>(c: Context<AppEnv>, reply: Wire<RpcResult<T>>): Response {
  try {
    return c.json(replyValue(reply));
  } catch (error) {
    if (!(error instanceof HttpFailure) || error.error.code !== "OperationMismatch") throw error;
    return errorResponse(c, error.error, 404);
  }
}
