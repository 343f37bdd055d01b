import * as v from "valibot";

// Tenant webhooks: endpoints a tenant registers to be told, by a signed POST, when its operations
// settle; request bodies, answers and the event a delivery carries.

/** The events an endpoint can subscribe to. `operation.suspended` is emitted by deferred runs, `schedule.*` by schedules. */
export const WEBHOOK_EVENT_TYPES = ["operation.settled", "operation.suspended", "schedule.fired", "schedule.skipped"] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Endpoints one tenant may register. */
export const MAX_WEBHOOK_ENDPOINTS = 10;
/** Endpoints one tenant may point at the same destination host (any port, any path). */
export const MAX_WEBHOOKS_PER_HOST = 3;
export const MAX_WEBHOOK_URL_CHARS = 2048;

export const WebhookEventTypeSchema = v.picklist(WEBHOOK_EVENT_TYPES, `events are ${WEBHOOK_EVENT_TYPES.join(", ")}`);

/** The body of `POST /v1/webhooks`. Whether the URL's scheme and host are allowed is checked after. */
const EventsSchema = v.pipe(v.array(WebhookEventTypeSchema), v.minLength(1, "events must name at least one event"), v.maxLength(WEBHOOK_EVENT_TYPES.length * 4));

export const CreateWebhookSchema = v.strictObject({
  url: v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_WEBHOOK_URL_CHARS)),
  events: EventsSchema,
});
export type CreateWebhook = v.InferOutput<typeof CreateWebhookSchema>;

/**
 * The body of `PATCH /v1/webhooks/{id}`: `enabled: true` re-enables a disabled endpoint (its
 * failure count starts again), `enabled: false` disables it; `events` replaces its subscriptions.
 * An empty patch changes nothing.
 */
export const PatchWebhookSchema = v.strictObject({
  enabled: v.optional(v.boolean()),
  events: v.optional(EventsSchema),
});
export type PatchWebhook = v.InferOutput<typeof PatchWebhookSchema>;

/** Endpoint ids as the service mints them (`wh_…`). */
export const WebhookIdSchema = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,64}$/, "Ids are 1–64 characters of A–Z a–z 0–9 _ -"));

export const WEBHOOK_ENDPOINT_STATUSES = ["enabled", "disabled"] as const;
export type WebhookEndpointStatus = (typeof WEBHOOK_ENDPOINT_STATUSES)[number];

/** One endpoint as listings show it: never its secret. */
export const WebhookEndpointSchema = v.object({
  id: v.string(),
  url: v.string(),
  events: v.array(WebhookEventTypeSchema),
  createdAt: v.number(),
  /** A disabled endpoint is sent nothing until the tenant re-enables it (`PATCH … { enabled: true }`). */
  status: v.picklist(WEBHOOK_ENDPOINT_STATUSES),
  /** Why it is disabled: its continuous failures, or the tenant's own PATCH. */
  disabledReason: v.optional(v.string()),
  /** When it was disabled (milliseconds since the epoch). */
  disabledAt: v.optional(v.number()),
});
export type WebhookEndpoint = v.InferOutput<typeof WebhookEndpointSchema>;

/** The answer of the creation: the endpoint and its signing secret, shown this once. */
export const CreatedWebhookSchema = v.object({ ...WebhookEndpointSchema.entries, secret: v.string() });
export type CreatedWebhook = v.InferOutput<typeof CreatedWebhookSchema>;

export const WEBHOOK_DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** One row of an endpoint's delivery log. */
export const WebhookDeliverySchema = v.object({
  eventId: v.string(),
  type: WebhookEventTypeSchema,
  status: v.picklist(WEBHOOK_DELIVERY_STATUSES),
  attempts: v.number(),
  /** The HTTP status of the last attempt, when the endpoint answered one. */
  lastStatusCode: v.optional(v.number()),
  /** Why the last attempt failed (`HTTP 500`, `timeout`, `unreachable`). */
  lastError: v.optional(v.string()),
  /** When the next attempt is due; null once the delivery is delivered or failed. */
  nextAttemptAt: v.nullable(v.number()),
  createdAt: v.number(),
  lastAttemptAt: v.optional(v.number()),
  deliveredAt: v.optional(v.number()),
});
export type WebhookDelivery = v.InferOutput<typeof WebhookDeliverySchema>;

/** What `operation.settled` tells: a summary of the operation's result, never content or secrets. */
export const OperationSettledDataSchema = v.object({
  sessionId: v.string(),
  lane: v.string(),
  operationId: v.string(),
  kind: v.string(),
  status: v.string(),
  error: v.optional(v.object({ code: v.string(), message: v.string() })),
});
export type OperationSettledData = v.InferOutput<typeof OperationSettledDataSchema>;

/** What `operation.suspended` tells: a deferred run went to sleep until it may be polled again. */
export const OperationSuspendedDataSchema = v.object({
  sessionId: v.string(),
  lane: v.string(),
  operationId: v.string(),
  /** When the service will poll the provider again at the earliest (milliseconds since the epoch). */
  pollAt: v.number(),
});
export type OperationSuspendedData = v.InferOutput<typeof OperationSuspendedDataSchema>;

/** What `schedule.fired` tells: a schedule's due time started its run (spec "Schedules"). */
export const ScheduleFiredDataSchema = v.object({
  sessionId: v.string(),
  lane: v.string(),
  scheduleId: v.string(),
  /** The due time the run stands for (the earliest of those it coalesced). */
  dueAt: v.number(),
  operationId: v.string(),
});
export type ScheduleFiredData = v.InferOutput<typeof ScheduleFiredDataSchema>;

/** What `schedule.skipped` tells: a due time started no run, and why (schema/schedules.ts SCHEDULE_SKIP_REASONS). */
export const ScheduleSkippedDataSchema = v.object({
  sessionId: v.string(),
  lane: v.string(),
  scheduleId: v.string(),
  dueAt: v.number(),
  reason: v.string(),
  detail: v.optional(v.string()),
});
export type ScheduleSkippedData = v.InferOutput<typeof ScheduleSkippedDataSchema>;

/** The JSON body of every delivery; `id` is the same on every attempt (receivers dedupe by it). */
export const WebhookEventSchema = v.variant("type", [
  v.object({ id: v.string(), type: v.literal("operation.settled"), createdAt: v.number(), data: OperationSettledDataSchema }),
  v.object({ id: v.string(), type: v.literal("operation.suspended"), createdAt: v.number(), data: OperationSuspendedDataSchema }),
  v.object({ id: v.string(), type: v.literal("schedule.fired"), createdAt: v.number(), data: ScheduleFiredDataSchema }),
  v.object({ id: v.string(), type: v.literal("schedule.skipped"), createdAt: v.number(), data: ScheduleSkippedDataSchema }),
]);
export type WebhookEvent = v.InferOutput<typeof WebhookEventSchema>;
