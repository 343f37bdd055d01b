import * as v from "valibot";
import { Cron } from "croner";
import { IdSchema, LimitQuerySchema } from "./api.ts";

// Schedules of spec/API.md "Schedules": a lane's prompt that starts on its own, on a 5-field cron
// expression in an IANA time zone, once at a time, or every n seconds. Request bodies, the answer,
// a run of a schedule, and the reasons a due time is skipped.

/** Schedules one lane may hold. */
export const MAX_SCHEDULES_PER_LANE = 20;
/** The shortest interval of `everySeconds`. */
export const MIN_EVERY_SECONDS = 60;
/** The longest interval of `everySeconds` (a year). */
export const MAX_EVERY_SECONDS = 366 * 24 * 3600;
/** A schedule's prompt text (the run's user message), in characters. */
export const MAX_SCHEDULE_PROMPT_CHARS = 32_000;
/** Runs kept per schedule (fired and skipped alike): the newest; older ones are dropped as new ones are recorded. */
export const MAX_SCHEDULE_RUNS_KEPT = 100;
/** How far ahead a one-off `at` may be (ten years), so that a typo in milliseconds is refused. */
const MAX_AT_AHEAD_MS = 10 * 366 * 24 * 3600 * 1000;

/**
 * What a schedule's run does when its lane is busy (spec "Prompt while busy"). `reject` (the
 * default) records the due time `skipped` with reason `lane_busy`.
 */
export const SCHEDULE_IF_BUSY = ["reject", "enqueue", "interrupt", "steer", "followUp"] as const;
export type ScheduleIfBusy = (typeof SCHEDULE_IF_BUSY)[number];

/**
 * Why a due time started no run (`skipped` of a run, `reason` of `schedule.skipped`):
 * - `lane_busy`: the lane was running another operation and `ifBusy` is `reject`;
 * - `quota`: the tenant's open-operations or request quota was used up;
 * - `lane_gone`: the lane no longer exists;
 * - `refused`: the lane refused the run for another reason (the queue was full, the model cannot
 *   run it: the run's `detail` says which error).
 */
export const SCHEDULE_SKIP_REASONS = ["lane_busy", "quota", "lane_gone", "refused"] as const;
export type ScheduleSkipReason = (typeof SCHEDULE_SKIP_REASONS)[number];

/** Whether `zone` is an IANA time zone this runtime knows (through Intl, as croner uses it). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The parse error of a 5-field cron expression, or undefined when it is one croner accepts. */
export function cronProblem(expression: string): string | undefined {
  if (expression.trim().split(/\s+/).length !== 5) return "cron has exactly 5 fields (minute hour day-of-month month day-of-week); seconds are not supported";
  try {
    const job = new Cron(expression, { mode: "5-part", paused: true });
    // A schedule that could never run would only sit there (its nextRunAt null, as if paused).
    if (job.nextRun() === null) return "cron never matches a date (such as the 31st of February)";
    return undefined;
  } catch (error) {
    return `cron is not valid: ${error instanceof Error ? error.message : String(error)}`;
  }
}

const CronSchema = v.pipe(
  v.string(),
  v.minLength(9, "cron has 5 fields"),
  v.maxLength(256),
  v.check((expression) => cronProblem(expression) === undefined, (issue) => cronProblem(String(issue.input)) ?? "cron is not valid"),
);
const TimeZoneSchema = v.pipe(v.string(), v.minLength(1), v.maxLength(64), v.check(isTimeZone, "timezone is not an IANA time zone (for example Europe/Berlin)"));
const AtSchema = v.pipe(v.number(), v.safeInteger("at is milliseconds since the epoch"), v.minValue(0), v.maxValue(Date.UTC(2200, 0, 1)));
const EverySchema = v.pipe(
  v.number(),
  v.safeInteger("everySeconds is a whole number of seconds"),
  v.minValue(MIN_EVERY_SECONDS, `everySeconds is at least ${MIN_EVERY_SECONDS}`),
  v.maxValue(MAX_EVERY_SECONDS, `everySeconds is at most ${MAX_EVERY_SECONDS}`),
);
const PromptSchema = v.pipe(v.string(), v.minLength(1, "prompt is not empty"), v.maxLength(MAX_SCHEDULE_PROMPT_CHARS, `prompt is at most ${MAX_SCHEDULE_PROMPT_CHARS} characters`));
const IfBusySchema = v.picklist(SCHEDULE_IF_BUSY, `ifBusy is one of ${SCHEDULE_IF_BUSY.join(", ")}`);

const timing = { cron: v.optional(CronSchema), at: v.optional(AtSchema), everySeconds: v.optional(EverySchema) };

function timings(input: { cron?: unknown; at?: unknown; everySeconds?: unknown }): number {
  return [input.cron, input.at, input.everySeconds].filter((field) => field !== undefined).length;
}

const common = {
  id: v.optional(IdSchema),
  timezone: v.optional(TimeZoneSchema),
  prompt: PromptSchema,
  ifBusy: v.optional(IfBusySchema),
};

/**
 * `POST …/lanes/{lane}/schedules`: exactly one of `cron`, `at`, `everySeconds` (a union of strict
 * objects, so that the OpenAPI document says so too).
 */
export const CreateScheduleSchema = v.pipe(
  v.union(
    [v.strictObject({ ...common, cron: CronSchema }), v.strictObject({ ...common, at: AtSchema }), v.strictObject({ ...common, everySeconds: EverySchema })],
    "body: give exactly one of cron, at, everySeconds, with prompt",
  ),
  v.check((body) => !("at" in body) || body.at <= Date.now() + MAX_AT_AHEAD_MS, "at is at most ten years ahead"),
);
export type CreateSchedule = v.InferOutput<typeof CreateScheduleSchema>;

/** `PATCH …/schedules/{id}`: a new timing replaces the old one (at most one of the three). */
export const PatchScheduleSchema = v.pipe(
  v.strictObject({ ...timing, timezone: v.optional(TimeZoneSchema), prompt: v.optional(PromptSchema), ifBusy: v.optional(IfBusySchema), paused: v.optional(v.boolean()) }),
  v.check((body) => timings(body) <= 1, "body: give at most one of cron, at, everySeconds"),
  v.check((body) => body.at === undefined || body.at <= Date.now() + MAX_AT_AHEAD_MS, "at is at most ten years ahead"),
);
export type PatchSchedule = v.InferOutput<typeof PatchScheduleSchema>;

/** When a schedule runs: exactly one of the three, in its time zone. */
export type ScheduleTiming = { cron: string } | { at: number } | { everySeconds: number };

/** The last due time a schedule reached: the run it started, or why it started none. */
export interface ScheduleLastRun {
  dueAt: number;
  operationId?: string;
  skipped?: ScheduleSkipReason;
}

/** A schedule as the API answers it. `nextRunAt` is null when no due time is left (a one-off that ran) or it is paused. */
export type Schedule = ScheduleTiming & {
  id: string;
  sessionId: string;
  lane: string;
  timezone: string;
  prompt: string;
  ifBusy: ScheduleIfBusy;
  paused: boolean;
  nextRunAt: number | null;
  lastRun: ScheduleLastRun | null;
  createdAt: number;
  updatedAt: number;
};

/**
 * One due time of a schedule: the run it started (`operationId`), or `skipped` with the reason.
 * `coalesced` counts the later due times this one stood for (missed during an outage or a pause).
 */
export interface ScheduleRun {
  dueAt: number;
  firedAt: number;
  operationId?: string;
  skipped?: ScheduleSkipReason;
  detail?: string;
  coalesced?: number;
}

/** `Omit` over each member of a union (the timing variants of a schedule) rather than their common keys. */
type OmitEach<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A schedule in the tenant-wide listing (`GET /v1/schedules`, from the index): no `lastRun` (each lane's listing has it). */
export type ListedSchedule = OmitEach<Schedule, "lastRun">;

/** What a session registers of a schedule with the index (its definition; the index keeps the next run apart). */
export type ScheduleDefinition = OmitEach<Schedule, "lastRun" | "nextRunAt">;

/** `GET …/schedules/{id}/runs?limit&cursor`: the cursor is the last due time answered (runs come newest first). */
export const ScheduleRunsQuerySchema = v.object({
  limit: LimitQuerySchema,
  cursor: v.optional(v.pipe(v.string(), v.regex(/^\d{1,16}$/, "cursor is the nextCursor of an earlier page"), v.transform(Number))),
});

/** `GET /v1/schedules?limit&cursor`: the cursor names the last schedule answered (`<sessionId>.<scheduleId>`). */
export const TenantSchedulesQuerySchema = v.object({
  limit: LimitQuerySchema,
  cursor: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^[A-Za-z0-9_-]{1,64}\.[A-Za-z0-9_-]{1,64}$/, "cursor is the nextCursor of an earlier page"),
      v.transform((cursor) => {
        const [sessionId = "", scheduleId = ""] = cursor.split(".");
        return { sessionId, scheduleId };
      }),
    ),
  ),
});

// Answer schemas (the OpenAPI document and the tests read answers with them).

const LastRunSchema = v.object({ dueAt: v.number(), operationId: v.optional(v.string()), skipped: v.optional(v.picklist(SCHEDULE_SKIP_REASONS)) });
const scheduleEntries = {
  id: v.string(),
  sessionId: v.string(),
  lane: v.string(),
  /** Exactly one of `cron`, `at`, `everySeconds` is present. */
  cron: v.optional(v.string()),
  at: v.optional(v.number()),
  everySeconds: v.optional(v.number()),
  timezone: v.string(),
  prompt: v.string(),
  ifBusy: v.picklist(SCHEDULE_IF_BUSY),
  paused: v.boolean(),
  nextRunAt: v.nullable(v.number()),
  createdAt: v.number(),
  updatedAt: v.number(),
};
export const ScheduleSchema = v.object({ ...scheduleEntries, lastRun: v.nullable(LastRunSchema) });
export const ListedScheduleSchema = v.object(scheduleEntries);
export const ScheduleRunSchema = v.object({
  dueAt: v.number(),
  firedAt: v.number(),
  operationId: v.optional(v.string()),
  skipped: v.optional(v.picklist(SCHEDULE_SKIP_REASONS)),
  detail: v.optional(v.string()),
  coalesced: v.optional(v.number()),
});
