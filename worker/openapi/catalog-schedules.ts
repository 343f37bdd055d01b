import * as v from "valibot";
import { IdSchema, pageSchema } from "../../schema/api.ts";
import { LaneNameSchema } from "../../schema/lane-api.ts";
import {
  CreateScheduleSchema,
  ListedScheduleSchema,
  MAX_SCHEDULE_RUNS_KEPT,
  MAX_SCHEDULES_PER_LANE,
  PatchScheduleSchema,
  ScheduleRunSchema,
  ScheduleRunsQuerySchema,
  ScheduleSchema,
  TenantSchedulesQuerySchema,
} from "../../schema/schedules.ts";
import type { CatalogRoute } from "./catalog-types.ts";

// Schedule routes: worker/routes/schedules.ts (docs/schedules.md).

const LANE = { sid: IdSchema, lane: LaneNameSchema };
const SCHEDULE = { ...LANE, id: IdSchema };
const SHAPE = "`{ id, sessionId, lane, cron | at | everySeconds, timezone, prompt, ifBusy, paused, nextRunAt, lastRun, createdAt, updatedAt }`";

export const scheduleCatalog: readonly CatalogRoute[] = [
  {
    method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/schedules", operationId: "createSchedule", tag: "Schedules", auth: "tenant",
    summary: "Schedule a prompt on a lane",
    description:
      `Exactly one of \`cron\` (5 fields: minute hour day-of-month month day-of-week, in \`timezone\`, an IANA zone, UTC by default), \`at\` (milliseconds since the epoch; a time already past runs at once) or \`everySeconds\` (at least 60; the first run one interval after creation). Each due time starts one run of \`prompt\` (at most 32,000 characters) with an operation id derived from the schedule and the due time, or is recorded \`skipped\` with a reason. \`ifBusy\` as for a prompt (default \`reject\`: a busy lane skips the due time). \`id\` defaults to a fresh \`sch_…\`; a repeat with the same \`id\` and body answers 200 with the schedule, another body under that id is 409 \`ScheduleExists\`. At most ${MAX_SCHEDULES_PER_LANE} per lane (422 \`LimitExceeded\`).`,
    pathParams: LANE, body: CreateScheduleSchema, example: { cron: "0 9 * * 1-5", timezone: "Europe/Berlin", prompt: "Summarize yesterday's tickets" }, idempotent: true,
    responses: { 201: { description: `The schedule: ${SHAPE}`, schema: ScheduleSchema }, 200: { description: "The same schedule, for a repeat of its creation", schema: ScheduleSchema } },
    errors: ["SessionNotFound", "UnknownLane", "ScheduleExists", "LimitExceeded"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/schedules", operationId: "listLaneSchedules", tag: "Schedules", auth: "tenant",
    summary: "A lane's schedules", description: `By id; at most ${MAX_SCHEDULES_PER_LANE}, so one page.`,
    pathParams: LANE,
    responses: { 200: { description: `\`{ items: [${SHAPE}] }\``, schema: v.object({ items: v.array(ScheduleSchema) }) } },
    errors: ["SessionNotFound", "UnknownLane"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/schedules/{id}", operationId: "getSchedule", tag: "Schedules", auth: "tenant",
    summary: "One schedule", pathParams: SCHEDULE,
    responses: { 200: { description: SHAPE, schema: ScheduleSchema } },
    errors: ["SessionNotFound", "UnknownLane", "ScheduleNotFound"],
  },
  {
    method: "patch", path: "/v1/sessions/{sid}/lanes/{lane}/schedules/{id}", operationId: "updateSchedule", tag: "Schedules", auth: "tenant",
    summary: "Edit, pause or resume a schedule",
    description:
      "Any of `cron`, `at`, `everySeconds` (one replaces the timing), `timezone`, `prompt`, `ifBusy`, `paused`. A new timing or zone recomputes `nextRunAt` from now. A paused schedule fires nothing (`nextRunAt: null`); resumed, it fires at once if due times passed while it was paused (one run for all of them), else at its next due time.",
    pathParams: SCHEDULE, body: PatchScheduleSchema, example: { paused: true },
    responses: { 200: { description: SHAPE, schema: ScheduleSchema } },
    errors: ["SessionNotFound", "UnknownLane", "ScheduleNotFound"],
  },
  {
    method: "delete", path: "/v1/sessions/{sid}/lanes/{lane}/schedules/{id}", operationId: "deleteSchedule", tag: "Schedules", auth: "tenant",
    summary: "Delete a schedule", description: "Its runs' records go with it; a run it started already is not stopped.",
    pathParams: SCHEDULE,
    responses: { 204: { description: "Deleted", content: "none" } },
    errors: ["SessionNotFound", "UnknownLane", "ScheduleNotFound"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/schedules/{id}/runs", operationId: "listScheduleRuns", tag: "Schedules", auth: "tenant",
    summary: "A schedule's runs",
    description: `\`{ items: [{ dueAt, firedAt, operationId? | skipped?, detail?, coalesced? }], nextCursor }\`, newest due time first: the run each due time started (\`operationId\`: read it with \`GET …/operations/{opId}\`) or why it started none (\`skipped\`: \`lane_busy\`, \`quota\`, \`lane_gone\`, \`refused\` with \`detail\`); \`coalesced\` counts the later due times a run stood for after an outage or a pause. The newest ${MAX_SCHEDULE_RUNS_KEPT} are kept. \`limit\` 1–1000, default 50.`,
    pathParams: SCHEDULE, query: ScheduleRunsQuerySchema,
    responses: { 200: { description: "A page of runs", schema: pageSchema(ScheduleRunSchema) } },
    errors: ["SessionNotFound", "UnknownLane", "ScheduleNotFound"],
  },
  {
    method: "get", path: "/v1/schedules", operationId: "listSchedules", tag: "Schedules", auth: "tenant",
    summary: "Every schedule of the tenant",
    description: "By session and id, from the deployment's index (no session is called): each schedule as its lane lists it, without `lastRun`. `limit` 1–1000, default 50.",
    query: TenantSchedulesQuerySchema,
    responses: { 200: { description: "A page of schedules", schema: pageSchema(ListedScheduleSchema) } },
    errors: [],
  },
];
