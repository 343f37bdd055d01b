import { MAX_QUEUED_BYTES, MAX_QUEUED_ITEMS } from "../../schema/lane.ts";
import * as v from "valibot";
import { IdSchema, PAGE_LIMIT_DEFAULT, pageSchema } from "../../schema/api.ts";
import { NamePageQuerySchema, SESSION_LIMITS } from "../../schema/api-sessions.ts";
import {
  EnqueueSchema,
  LaneConfigPatchSchema,
  LaneNameSchema,
  NewLaneEntrySchema,
  CompactConvenienceSchema,
  NavigateConvenienceSchema,
  OperationRequestSchema,
  PromptConvenienceSchema,
  PutLaneSchema,
  WaitQuerySchema,
} from "../../schema/lane-api.ts";
import {
  AbortOutcomeSchema,
  AbortRequestResultSchema,
  CancelQueuedAnswerSchema,
  CompactAnswerSchema,
  EntryPlacementSchema,
  LaneSnapshotAnswerSchema,
  NavigateAnswerSchema,
  OperationViewSchema,
  AcceptedOperationSchema,
  PendingOperationSchema,
  PendingRunSchema,
  PROMPT_ANSWER_LIMITS,
  QueuedPromptSchema,
  PromptAnswerSchema,
  QueuedSchema,
  SuspendedRunSchema,
} from "../../schema/lane-answers.ts";
import { LaneConfigurationSchema, LaneExecutionInfoSchema, LaneInfoSchema, OperationResultRecordSchema } from "../../schema/lane.ts";
import { EVENT_WINDOW_CHARS, EVENT_WINDOW_EVENTS, EVENT_WINDOW_TOTAL_CHARS } from "../../durable-objects/session/watch/event-window.ts";
import { LaneEventsQuerySchema, SSE_HEARTBEAT_DEFAULT_SECONDS } from "../../schema/watch-resume.ts";
import { SNAPSHOT_TRANSCRIPT_MAX_BYTES, SNAPSHOT_TRANSCRIPT_MAX_ENTRIES } from "../../schema/transcript-bounds.ts";
import {
  WATCH_ACK_EVERY_BYTES,
  WATCH_CLOSE,
  WATCH_MAX_SOCKET_AGE_MS,
  WATCH_MESSAGE_BURST,
  WATCH_MESSAGES_PER_SECOND,
  WATCH_UNACKED_WINDOW_BYTES,
  WatchQuerySchema,
} from "../../schema/watch.ts";
import { MAX_PENDING_RUNS } from "../../harness/runtime/pending-runs.ts";
import { LANE_ERRORS, SESSION_ERRORS, type CatalogRoute } from "./catalog-types.ts";

// spec/API.md "Lanes", "Queue", "Operations" and "Watch protocol": worker/routes/lanes.ts,
// operations.ts and watch.ts (docs/api-lanes.md, docs/api-watch.md).

/** The watch protocol's flow control and close codes, in both watch routes (docs/api-watch.md). */
/** The prompt-while-busy strategies, as the descriptions name them. */
const IF_BUSY = "`ifBusy` (`reject`, the default: 409 `LaneBusy`; `enqueue`: a pending run, at most " + String(MAX_PENDING_RUNS) + " per lane, 409 `QueueFull` beyond; `interrupt`: abort the current operation and run this one first; `steer` / `followUp`: hand the prompt to the running operation; on an idle lane each starts the run)";

const WATCH_PROTOCOL =
  `Acknowledge received bytes with \`{ "type": "ack", "bytes": n }\` (the UTF-8 length of all snapshot and event messages so far) at least every ${mib(WATCH_ACK_EVERY_BYTES)}: ` +
  `more than ${mib(WATCH_UNACKED_WINDOW_BYTES)} unacknowledged closes the socket ${WATCH_CLOSE.slowConsumer}. ` +
  `Client messages: a burst of ${WATCH_MESSAGE_BURST}, then ${WATCH_MESSAGES_PER_SECOND} per second. Close codes: ${WATCH_CLOSE.sessionDeleted} session deleted, ` +
  `${WATCH_CLOSE.maxAge} socket older than ${WATCH_MAX_SOCKET_AGE_MS / 3_600_000} h, ${WATCH_CLOSE.binary} binary frame, ${WATCH_CLOSE.policy} invalid or oversized message, ` +
  `rate limit, acknowledgement beyond what was sent, or the key was revoked; ${WATCH_CLOSE.internal} server failure, ` +
  `${WATCH_CLOSE.restart} restarted before the first snapshot, ${WATCH_CLOSE.slowConsumer} slow consumer. ` +
  `With \`?batch=true\`, events that are due together arrive as one \`{ type: "batch", messages: [...] }\` frame (the messages in seq order). See docs/api-watch.md.`;
const SNAPSHOT_TRANSCRIPT =
  `\`snapshot.transcript\` is at most the newest ${SNAPSHOT_TRANSCRIPT_MAX_ENTRIES} entries and ${mib(SNAPSHOT_TRANSCRIPT_MAX_BYTES)}; ` +
  "`snapshot.olderEntries.start` then names the newest entry left out (read older ones with `GET …/branches/{lane}/entries?start=…&stopAtType=compaction`).";

function mib(bytes: number): string {
  return `${bytes / (1024 * 1024)} MiB`;
}

const SID = { sid: IdSchema };
const LANE = { ...SID, lane: LaneNameSchema };
const OPERATION = { ...LANE, opId: IdSchema };
const OPERATION_VIEW = "`{ state: \"settled\", result }` or `{ state: \"active\", status, at, retry? }`";
const CONVENIENCE = "The settled record, or `{ status: \"suspended\", operationId, deferred }`";
const OPEN_QUOTA = "While the tenant has `maxOpenOperations` operations open (accepted, not settled), 429 `RateLimited` with `details.quota: \"maxOpenOperations\"` and `Retry-After`.";
const CONFIG_CHECK =
  "A model this deployment does not offer (see `GET /v1/models`) is 422 `UnknownModel`, tools that do not exist 422 `UnknownTool` (no tools exist in this build yet); nothing is written then.";
const WAIT_DEFAULT = (seconds: number) => `\`?wait=\` seconds (≤ 60, default ${seconds}).`;

export const laneCatalog: readonly CatalogRoute[] = [
  {
    method: "get", path: "/v1/sessions/{sid}/lanes", operationId: "listLanes", tag: "Lanes", auth: "tenant",
    summary: "List lanes",
    description: `Lanes by name: \`{ items: LaneInfo[], nextCursor }\`, a LaneInfo being \`{ name, tipId, operation }\`. \`limit\` is 1–1000 (default ${PAGE_LIMIT_DEFAULT}); \`nextCursor\` continues, null on the last page.`,
    pathParams: SID, query: NamePageQuerySchema,
    responses: { 200: { description: "A page of lanes", schema: pageSchema(LaneInfoSchema) } },
    errors: SESSION_ERRORS,
  },
  {
    method: "put", path: "/v1/sessions/{sid}/lanes/{lane}", operationId: "putLane", tag: "Lanes", auth: "tenant",
    summary: "Get or create a lane",
    description:
      "`createAt` is the entry a new lane's branch starts at (null: empty); `model`, `thinkingLevel` and `activeTools` configure a new lane (default: `scripted/echo`, `off`, none). Both apply only when the request creates the lane. In a session bound to an agent version, a new lane takes the version's model, thinking level and active tools, under the fields given (\`agent: false\`: the defaults instead; \`agent: true\` in a session bound to none is 409 \`AgentNotBound\`). " +
      CONFIG_CHECK +
      ` A session holds at most ${SESSION_LIMITS.lanes} lanes and ${SESSION_LIMITS.branches} branches; a new lane beyond either (its branch counts when the branch is new) is 422 \`LimitExceeded\`.`,
    pathParams: LANE, body: PutLaneSchema, example: { createAt: null, model: { provider: "scripted", modelId: "echo" } },
    responses: { 200: { description: "The existing lane's LaneInfo", schema: LaneInfoSchema }, 201: { description: "The created lane's LaneInfo", schema: LaneInfoSchema } },
    errors: [...SESSION_ERRORS, "UnknownTarget", "InvalidLane", "UnknownModel", "UnknownTool", "DeferredUnsupported", "LimitExceeded", "AgentNotBound"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/lanes/{lane}", operationId: "getLane", tag: "Lanes", auth: "tenant",
    summary: "A lane's execution state", pathParams: LANE,
    responses: { 200: { description: "LaneExecutionInfo `{ lane, tipId, configuration, current, lastOperationId, queues }`", schema: LaneExecutionInfoSchema } },
    errors: LANE_ERRORS,
  },
  {
    method: "patch", path: "/v1/sessions/{sid}/lanes/{lane}/config", operationId: "configureLane", tag: "Lanes", auth: "tenant",
    summary: "Configure a lane (model, thinking level, active tools)", description: CONFIG_CHECK,
    pathParams: LANE, body: LaneConfigPatchSchema, example: { thinkingLevel: "low" },
    responses: { 200: { description: "The configuration", schema: LaneConfigurationSchema } },
    errors: [...LANE_ERRORS, "UnknownModel", "UnknownTool", "DeferredUnsupported"],
  },
  {
    method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/entries", operationId: "appendLaneEntry", tag: "Lanes", auth: "tenant",
    summary: "Append an entry to a lane", description: "Placed now when idle (after queued writes); queued as a `write` item when busy (409 `QueueFull` when the queue is at its bound).",
    pathParams: LANE, body: NewLaneEntrySchema, example: { customType: "note", data: { text: "remember this" } }, idempotent: true,
    responses: { 201: { description: "`{ entryId, placed }`", schema: EntryPlacementSchema } },
    errors: [...LANE_ERRORS, "InvalidMessage", "QueueFull", "LimitExceeded"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/snapshot", operationId: "getLaneSnapshot", tag: "Lanes", auth: "tenant",
    summary: "A lane's snapshot", pathParams: LANE,
    responses: { 200: { description: `\`{ seq, snapshot: LaneSnapshot }\`. ${SNAPSHOT_TRANSCRIPT}`, schema: LaneSnapshotAnswerSchema } },
    errors: LANE_ERRORS,
  },
  {
    method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/queue", operationId: "enqueue", tag: "Lanes", auth: "tenant",
    summary: "Queue a message (steer, followUp, nextRun)",
    description: `Admits whether the lane is idle or busy, while the queue holds fewer than ${MAX_QUEUED_ITEMS} items and ${MAX_QUEUED_BYTES / 1024 / 1024} MiB of payload; past that, 409 \`QueueFull\`.`,
    pathParams: LANE, body: EnqueueSchema, example: { kind: "followUp", message: "And then?" }, idempotent: true,
    responses: { 201: { description: "`{ entryId }`", schema: QueuedSchema } },
    errors: [...LANE_ERRORS, "InvalidMessage", "QueueFull", "LimitExceeded"],
  },
  {
    method: "delete", path: "/v1/sessions/{sid}/lanes/{lane}/queue/{entryId}", operationId: "cancelQueued", tag: "Lanes", auth: "tenant",
    summary: "Cancel a queued item", pathParams: { ...LANE, entryId: IdSchema },
    responses: { 200: { description: "`{ result: \"cancelled\" | \"already_consumed\" | \"not_found\" }`", schema: CancelQueuedAnswerSchema } },
    errors: LANE_ERRORS,
  },
  {
    method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/operations", operationId: "acceptOperation", tag: "Operations", auth: "tenant",
    summary: "Accept an operation",
    description: "Acceptance runs no work; the session object drives it. `navigation` moves the lane's tip (`targetId`, or null for the root; `label` optional); `compaction` summarizes the lane's older context into a compaction entry (422 `NothingToCompact` when it all fits in the kept recent part); `navigation` with `summarize: true` also summarizes the branch the tip leaves (after the point it shares with the target) into a branch-summary entry under the target, which becomes the tip (422 `InvalidNavigation` reason `summarize_root` for the root). " + OPEN_QUOTA,
    pathParams: LANE, body: OperationRequestSchema, example: { kind: "prompt", prompt: "Hello" }, idempotent: true,
    responses: {
      202: {
        description: `\`{ operationId, kind, startedAt }\`; under ${IF_BUSY} a pending run \`{ operationId, kind, state: "pending", position, acceptedAt }\` (with \`interrupted\` for an interrupt) or the running operation it was handed to \`{ operationId, entryId, queued }\``,
        schema: AcceptedOperationSchema,
      },
    },
    errors: [...LANE_ERRORS, "LaneBusy", "QueueFull", "InvalidMessage", "UnknownSkill", "UnknownTemplate", "UnknownTarget", "InvalidNavigation", "NothingToCompact", "InvalidOperationId", "DeferredUnsupported", "RateLimited", "LimitExceeded"],
  },
  {
    method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/compact", operationId: "compact", tag: "Operations", auth: "tenant",
    summary: "Compact and wait; then the continuation run",
    description: `Summarizes the lane's older context (everything before the newest \`settings.compaction.keepRecentTokens\` tokens) with the lane's model and places one compaction entry on its tip; \`customInstructions\` says what the summary should focus on. \`wait\` in seconds (≤ 60, default 60). Answers \`{ compaction: record, run? }\`: when the compaction completed and queued steer, follow-up or next-run input is waiting, the run that takes it starts after the compaction and \`run\` is its answer (as for prompt). ${OPEN_QUOTA}`,
    pathParams: LANE, body: CompactConvenienceSchema, example: { customInstructions: "Keep the open questions" }, idempotent: true,
    responses: {
      200: { description: "`{ compaction: record, run? }`", schema: CompactAnswerSchema },
      202: { description: "`{ operationId }`: the wait ran out", schema: PendingOperationSchema },
    },
    errors: [...LANE_ERRORS, "LaneBusy", "NothingToCompact", "InvalidOperationId", "RateLimited", "LimitExceeded"],
  },
  {
    method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/navigate", operationId: "navigate", tag: "Operations", auth: "tenant",
    summary: "Navigate and wait; then the continuation run",
    description: `Moves the lane's tip to \`targetId\` (null: the root), with an optional \`label\` on the target. \`wait\` in seconds (≤ 60, default 60). Answers \`{ navigation: record, run? }\`: when the navigation completed and queued steer, follow-up or next-run input is waiting, the run that takes it starts from the new tip and \`run\` is its answer (as for prompt). With \`summarize: true\` the branch the tip leaves (after the point it shares with the target) is first summarized by the lane's model (\`customInstructions\` says what to focus on) into a branch-summary entry placed under the target, and the tip ends on that entry; when the target lies ahead of the tip nothing is left behind and the move is a plain one. ${OPEN_QUOTA}`,
    pathParams: LANE, body: NavigateConvenienceSchema, example: { targetId: "019a2b3c-4d5e-7f60-8a1b-2c3d4e5f6a7b", label: "before the detour", summarize: true }, idempotent: true,
    responses: {
      200: { description: "`{ navigation: record, run? }`", schema: NavigateAnswerSchema },
      202: { description: "`{ operationId }`: the wait ran out", schema: PendingOperationSchema },
    },
    errors: [...LANE_ERRORS, "LaneBusy", "UnknownTarget", "InvalidNavigation", "InvalidOperationId", "RateLimited", "LimitExceeded"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/operations/{opId}", operationId: "getOperation", tag: "Operations", auth: "tenant",
    summary: "An operation, settled or current (drive(id) made total)",
    description: `${WAIT_DEFAULT(0)} Long-polls until settled or a durable wait. An id neither current nor settled is 404 \`OperationMismatch\`.`,
    pathParams: OPERATION, query: WaitQuerySchema,
    responses: { 200: { description: OPERATION_VIEW, schema: OperationViewSchema } },
    errors: [...LANE_ERRORS, "OperationMismatch"], errorStatus: { OperationMismatch: 404 },
  },
  {
    method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/operations/{opId}/abort", operationId: "abortOperation", tag: "Operations", auth: "tenant",
    summary: "Request the abort of an operation", description: "A pending run is cancelled before it starts (its record: `aborted`, `error.code: \"cancelled_before_start\"`). A stale id (neither current nor pending) is 409 `OperationMismatch`. With an `Idempotency-Key`, a repeat answers the first answer, the steers and follow-ups it handed back included.",
    pathParams: OPERATION, idempotent: true,
    responses: { 200: { description: "`{ operationId, newlyRequested, steer, followUp }`", schema: AbortRequestResultSchema } },
    errors: [...LANE_ERRORS, "OperationMismatch"],
  },
  {
    method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/operations/{opId}/resume", operationId: "resumeOperation", tag: "Operations", auth: "tenant",
    summary: "One deferred poll permit / drive now", description: `${WAIT_DEFAULT(0)} Answers like GET.`,
    pathParams: OPERATION, query: WaitQuerySchema,
    responses: { 200: { description: OPERATION_VIEW, schema: OperationViewSchema } },
    errors: [...LANE_ERRORS, "OperationMismatch"], errorStatus: { OperationMismatch: 404 },
  },
  {
    method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/prompt", operationId: "prompt", tag: "Operations", auth: "tenant",
    summary: "Prompt and wait (accept + wait)",
    description: `\`wait\` in seconds (≤ 60, default 60). \`deferred: true | { window }\` asks for a deferred answer (a background response or batch; 422 \`DeferredUnsupported\` on a model that cannot give one), \`false\` a live one whatever the session's \`streamOptions.deferred\`. A settled run answers its record plus \`messages\`: what the run placed on the lane's branch, oldest first, the final assistant message last; the newest ${PROMPT_ANSWER_LIMITS.messages} messages within ${PROMPT_ANSWER_LIMITS.bytes / 1024} KiB (the final message always), \`messagesTruncated: true\` when older ones were left out. ${OPEN_QUOTA}`,
    pathParams: LANE, body: PromptConvenienceSchema, example: { prompt: "Hello", wait: 5 }, idempotent: true,
    responses: {
      200: {
        description: `The settled record with \`messages\` and \`messagesTruncated\`, or \`{ status: "suspended", operationId, deferred }\`; under ${IF_BUSY} a pending run's wait includes its time in line, an interrupt's answer adds \`interrupted: { operationId, steer, followUp }\`, and a prompt handed to the running operation answers \`{ operationId, entryId, queued }\` at once. With \`Accept: text/event-stream\` (or \`stream: true\`) the answer is instead a \`text/event-stream\` of the run's events (\`event\` events, as \`GET …/events\` sends them) ending with one \`result\` event whose data is this JSON body; a repeat with the same Idempotency-Key answers 202 \`{ operationId }\``,
        schema: v.union([PromptAnswerSchema, SuspendedRunSchema, QueuedPromptSchema]),
      },
      202: { description: "`{ operationId }`: the wait ran out", schema: PendingOperationSchema },
    },
    errors: [...LANE_ERRORS, "LaneBusy", "QueueFull", "InvalidMessage", "InvalidOperationId", "DeferredUnsupported", "RateLimited", "LimitExceeded"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/pending", operationId: "listPendingRuns", tag: "Operations", auth: "tenant",
    summary: "The lane's pending runs, in line",
    description: `Runs accepted with \`ifBusy: "enqueue"\` (or \`"interrupt"\`) while the lane was busy, in the order they will start (at most ${MAX_PENDING_RUNS}, so one page). Each starts when the operation before it has ended, exactly once.`,
    pathParams: LANE,
    responses: { 200: { description: "`{ items: [{ operationId, kind, state, position, acceptedAt }] }`", schema: v.object({ items: v.array(PendingRunSchema) }) } },
    errors: LANE_ERRORS,
  },
  {
    method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/abort", operationId: "abortCurrent", tag: "Operations", auth: "tenant",
    summary: "Abort the current operation", description: WAIT_DEFAULT(10),
    pathParams: LANE, query: WaitQuerySchema, idempotent: true,
    responses: { 200: { description: "`{ operationId, newlyRequested, steer, followUp, record? }`", schema: AbortOutcomeSchema } },
    errors: [...LANE_ERRORS, "NoActiveOperation"],
  },
  {
    method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/resume", operationId: "resumeCurrent", tag: "Operations", auth: "tenant",
    summary: "Resume the current operation", description: WAIT_DEFAULT(60),
    pathParams: LANE, query: WaitQuerySchema,
    responses: {
      200: { description: CONVENIENCE, schema: v.union([OperationResultRecordSchema, SuspendedRunSchema]) },
      202: { description: "`{ operationId }`: the wait ran out", schema: PendingOperationSchema },
    },
    errors: [...LANE_ERRORS, "NothingToResume"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/watch", operationId: "watchSession", tag: "Watch", auth: "tenant",
    summary: "Watch a session (WebSocket)",
    description: `Lane inventory, lane lifecycle, operation starts and ends, usage, faults and settings. Authenticate with the header or the subprotocol \`bearer.<key>\` (selected in the 101). ${WATCH_PROTOCOL}`,
    pathParams: SID, query: WatchQuerySchema,
    responses: { 101: { description: "Switching Protocols: snapshot, then events", content: "none" } },
    errors: ["SessionNotFound", "UpgradeRequired", "Overloaded"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/events", operationId: "laneEvents", tag: "Watch", auth: "tenant",
    summary: "Stream a lane (Server-Sent Events)",
    description:
      "The lane's watch stream over HTTP, whatever `Accept` says: an `event: snapshot` (data: the watch socket's snapshot message), then one `event: event` per lane event (data: the socket's event message), each with `id: <epoch>.<seq>`, and a `: ping` comment every `heartbeat` seconds (default " +
      String(SSE_HEARTBEAT_DEFAULT_SECONDS) +
      "). `Last-Event-ID` (or `?after=<id>`) resumes after that id without a snapshot while the lane still retains its events (at least the newest " +
      String(EVENT_WINDOW_EVENTS) +
      " of the lane while the session object runs, fewer when they exceed " +
      mib(EVENT_WINDOW_CHARS) +
      ", or when the session's windows together exceed " +
      mib(EVENT_WINDOW_TOTAL_CHARS) +
      "); an id outside the window, from before the object restarted, or garbled starts with a snapshot instead. The stream ends after an `event: error` (data `{ code, reason }`, the watch socket's close code) when the session is deleted, the key revoked, or the reader falls more than " +
      mib(WATCH_UNACKED_WINDOW_BYTES) +
      " behind. A browser token with the `watch` scope may be sent as `?access_token=` (EventSource). See docs/api-watch.md.",
    pathParams: LANE, query: LaneEventsQuerySchema,
    responses: { 200: { description: "The event stream", content: "sse", schema: v.pipe(v.string(), v.description("text/event-stream")) } },
    errors: ["SessionNotFound", "UnknownLane"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/watch", operationId: "watchLane", tag: "Watch", auth: "tenant",
    summary: "Watch a lane (WebSocket)",
    description: `\`{ type: "snapshot", seq, snapshot }\` first, then \`{ type: "event", seq, event }\` in order; send \`{ "type": "resnapshot" }\` for a fresh snapshot, \`ping\` for \`pong\`. The snapshot's transcript is its newest part (see getLaneSnapshot). ${WATCH_PROTOCOL}`,
    pathParams: LANE, query: WatchQuerySchema,
    responses: { 101: { description: "Switching Protocols: snapshot, then events", content: "none" } },
    errors: ["SessionNotFound", "UnknownLane", "UpgradeRequired", "Overloaded"],
  },
];
