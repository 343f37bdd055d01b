import * as v from "valibot";
import { EntryLabelTextSchema, IdSchema } from "./api.ts";
import { JsonValueSchema, namesEachOnce } from "./json.ts";
import { ModelIdentitySchema, ThinkingLevelSchema } from "./lane.ts";
import { DeferredModeSchema } from "./settings.ts";
import { AgentMessageInputSchema, ImageContentSchema } from "./messages.ts";

// Request bodies and parameters of spec/API.md "Lanes", "Queue" and "Operations" (primitives and
// conveniences). The front worker validates with these before any object is touched.

/** Lane names, entry ids and operation ids in paths are validated like ids. */
export const LaneNameSchema = IdSchema;

/** The longest a caller may wait on one request (`?wait=` / `wait`), in seconds. */
export const MAX_WAIT_SECONDS = 60;

const shortText = v.pipe(v.string(), v.maxLength(256));
export const ImagesSchema = v.optional(v.pipe(v.array(ImageContentSchema), v.maxLength(64)));
const images = ImagesSchema;
/** A fresh UUIDv7 chosen by the caller; the engine checks freshness and form (InvalidOperationId). */
export const OperationIdSchema = v.optional(
  v.pipe(v.string(), v.minLength(1), v.maxLength(64), v.description("A UUIDv7 not used before in this session (400 InvalidOperationId otherwise); the server mints one when it is left out.")),
);
const operationId = OperationIdSchema;
/** A run's own deferred mode; absent: the session's `settings.streamOptions.deferred`. */
const deferred = v.optional(DeferredModeSchema);
const waitSeconds = v.pipe(v.number(), v.finite(), v.minValue(0), v.maxValue(MAX_WAIT_SECONDS));

/** `?wait=<seconds ≤ 60>` (up to 3 decimals), as milliseconds; absent → `undefined`. */
export const WaitSecondsQuerySchema = v.optional(
  v.pipe(
    v.string(),
    v.regex(/^\d{1,2}(\.\d{1,3})?$/, "wait is a number of seconds"),
    v.transform(Number),
    v.maxValue(MAX_WAIT_SECONDS, `wait is at most ${MAX_WAIT_SECONDS} seconds`),
    v.transform((seconds) => Math.round(seconds * 1000)),
  ),
);
export const WaitQuerySchema = v.object({ wait: WaitSecondsQuerySchema });

const laneConfigEntries = {
  model: v.optional(ModelIdentitySchema),
  thinkingLevel: v.optional(ThinkingLevelSchema),
  // A set: each request declares one tool per name, and providers refuse a name declared twice.
  activeTools: v.optional(v.pipe(v.array(shortText), v.maxLength(256), v.check((names: string[]) => namesEachOnce(names), "activeTools names each tool once"))),
};

export const LaneConfigPatchSchema = v.strictObject(laneConfigEntries);

/**
 * `PUT …/lanes/{lane}`: where a new lane's branch starts and, optionally, its configuration. Both
 * apply only when the request creates the lane; the configuration is checked either way.
 */
/**
 * `PUT …/lanes/{lane}`: where a new lane starts and its configuration. In a session bound to an
 * agent, a new lane takes the version's lane configuration (`agent: false`: the defaults instead);
 * the fields given override it.
 */
export const PutLaneSchema = v.optional(v.strictObject({ createAt: v.optional(v.nullable(IdSchema)), agent: v.optional(v.boolean()), ...laneConfigEntries }), {});

/** `{ message }` or `{ customType, data? }`: one lane entry (placed now when idle, queued when busy). */
export const NewLaneEntrySchema = v.union([
  v.strictObject({ message: AgentMessageInputSchema }),
  v.strictObject({ customType: v.pipe(v.string(), v.minLength(1), v.maxLength(256)), data: v.optional(JsonValueSchema) }),
]);

export const EnqueueSchema = v.strictObject({
  kind: v.picklist(["steer", "followUp", "nextRun"]),
  message: v.union([v.string(), AgentMessageInputSchema]),
  images,
});

export const PromptInputSchema = v.union([v.string(), AgentMessageInputSchema, v.pipe(v.array(AgentMessageInputSchema), v.maxLength(256))]);
const promptInput = PromptInputSchema;

const instructions = v.optional(v.pipe(v.string(), v.maxLength(200_000)));

/** OperationRequest of spec/API.md "Operations: primitives". */
/**
 * What a prompt does when its lane is busy (spec "Prompt while busy"): `reject` (409 LaneBusy, the
 * default), `enqueue` (a pending run), `interrupt` (abort, then this run), `steer` or `followUp`
 * (handed to the running operation). On an idle lane every strategy starts the run.
 */
export const IfBusySchema = v.picklist(["reject", "enqueue", "interrupt", "steer", "followUp"]);
export type IfBusy = v.InferOutput<typeof IfBusySchema>;
const ifBusy = v.optional(IfBusySchema);

export const OperationRequestSchema = v.variant("kind", [
  v.strictObject({ kind: v.literal("prompt"), prompt: promptInput, images, operationId, deferred, ifBusy }),
  v.strictObject({ kind: v.literal("skill"), name: v.pipe(v.string(), v.minLength(1), v.maxLength(64)), additionalInstructions: instructions, operationId, deferred }),
  v.strictObject({
    kind: v.literal("prompt_template"),
    name: v.pipe(v.string(), v.minLength(1), v.maxLength(64)),
    args: v.optional(v.pipe(v.array(v.pipe(v.string(), v.maxLength(100_000))), v.maxLength(64))),
    operationId,
    deferred,
  }),
  v.strictObject({ kind: v.literal("compaction"), customInstructions: instructions, operationId }),
  v.strictObject({
    kind: v.literal("navigation"),
    targetId: v.nullable(IdSchema),
    summarize: v.optional(v.boolean()),
    label: v.optional(EntryLabelTextSchema),
    customInstructions: instructions,
    operationId,
  }),
]);
export type OperationRequestBody = v.InferOutput<typeof OperationRequestSchema>;
/** The run requests this build executes. */
export type RunRequest = Extract<OperationRequestBody, { kind: "prompt" | "skill" | "prompt_template" }>;

/** `POST …/prompt` `{ prompt, images?, wait? }` (wait in seconds, default 60). */
export const PromptConvenienceSchema = v.strictObject({
  prompt: promptInput,
  images,
  wait: v.optional(waitSeconds),
  operationId,
  deferred,
  ifBusy,
  /** Answer with the run's events as Server-Sent Events, ending with its answer (as `Accept: text/event-stream`). */
  stream: v.optional(v.boolean()),
});
export type PromptConvenience = v.InferOutput<typeof PromptConvenienceSchema>;

/** `POST …/navigate` `{ targetId, summarize?, label?, customInstructions?, wait? }` (wait in seconds). */
export const NavigateConvenienceSchema = v.strictObject({
  targetId: v.nullable(IdSchema),
  summarize: v.optional(v.boolean()),
  label: v.optional(EntryLabelTextSchema),
  customInstructions: instructions,
  wait: v.optional(waitSeconds),
  operationId,
});

/** `POST …/compact` `{ customInstructions?, wait? }` (wait in seconds). */
export const CompactConvenienceSchema = v.strictObject({
  customInstructions: instructions,
  wait: v.optional(waitSeconds),
  operationId,
});
