import { UiPartInputSchema } from "../../schema/ai-sdk.ts";
import type { JsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";
import { KeyInfoSchema, LimitQuerySchema, PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, TenantQuotasSchema } from "../../schema/api.ts";
import { BranchOrderQuerySchema, FromSeqQuerySchema } from "../../schema/api-sessions.ts";
import { ExportedBranchesObjectSchema, ExportedEntrySchema } from "../../schema/data-export.ts";
import { SESSION_LIMITS } from "../../schema/api-sessions.ts";
import { EntrySchema } from "../../schema/entries.ts";
import { ApiErrorSchema } from "../../schema/errors.ts";
import { JsonObjectSchema, JsonValueSchema } from "../../schema/json.ts";
import { MAX_WAIT_SECONDS, WaitSecondsQuerySchema } from "../../schema/lane-api.ts";
import { OperationAdmissionSchema, OperationViewSchema, PendingOperationSchema, PromptAnswerSchema, SuspendedRunSchema } from "../../schema/lane-answers.ts";
import {
  LaneConfigurationSchema,
  LaneExecutionInfoSchema,
  LaneInfoSchema,
  LaneQueuedItemSchema,
  LaneSnapshotSchema,
  ModelIdentitySchema,
  OperationResultRecordSchema,
} from "../../schema/lane.ts";
import { HeadersObjectSchema, MAX_MCP_HEADERS, McpServerViewSchema, ReplayMapObjectSchema } from "../../schema/mcp.ts";
import { AgentMessageInputSchema, AgentMessageSchema, DeferredHandleSchema, ImageContentSchema } from "../../schema/messages.ts";
import { BranchListingSchema, SessionSchema } from "../../schema/session.ts";
import { HarnessResourcesSchema, HarnessSettingsSchema, MAX_STREAM_HEADERS, StreamHeadersObjectSchema, StreamHeadersPatchObjectSchema } from "../../schema/settings.ts";
import { HarnessSettingsPatchSchema } from "../../schema/settings-patch.ts";
import { MetadataObjectSchema, MetadataPatchObjectSchema, SESSION_METADATA_LIMITS } from "../../schema/session-metadata.ts";
import { MAX_TOOL_PARAMETERS_BYTES, ToolDefinitionViewSchema, ToolParametersSchema } from "../../schema/tools.ts";
import { SessionStatsSchema, UsageRowSchema, UsageSchema, UsageTotalsSchema } from "../../schema/usage.ts";
import { ErrorBodySchema } from "./responses.ts";

// The named parts of the OpenAPI document (document.ts): shared schemas, the JSON Schemas of what
// @valibot/to-json-schema cannot convert, and the response headers.

/**
 * Shared shapes: referenced as `#/components/schemas/<name>` wherever the same schema object occurs,
 * so a generated client names them (`components["schemas"]["Session"]`).
 */
export const COMPONENTS: Record<string, v.GenericSchema> = {
  ApiError: ApiErrorSchema,
  ErrorResponse: ErrorBodySchema,
  JsonValue: JsonValueSchema,
  JsonObject: JsonObjectSchema,
  AgentMessage: AgentMessageSchema,
  AgentMessageInput: AgentMessageInputSchema,
  ImageContent: ImageContentSchema,
  DeferredHandle: DeferredHandleSchema,
  Entry: EntrySchema,
  Usage: UsageSchema,
  UsageTotals: UsageTotalsSchema,
  UsageRow: UsageRowSchema,
  SessionStats: SessionStatsSchema,
  ModelIdentity: ModelIdentitySchema,
  LaneConfiguration: LaneConfigurationSchema,
  HarnessSettings: HarnessSettingsSchema,
  HarnessSettingsPatch: HarnessSettingsPatchSchema,
  HarnessResources: HarnessResourcesSchema,
  Session: SessionSchema,
  BranchListing: BranchListingSchema,
  LaneInfo: LaneInfoSchema,
  LaneExecutionInfo: LaneExecutionInfoSchema,
  LaneQueuedItem: LaneQueuedItemSchema,
  LaneSnapshot: LaneSnapshotSchema,
  OperationResultRecord: OperationResultRecordSchema,
  OperationAdmission: OperationAdmissionSchema,
  OperationView: OperationViewSchema,
  PromptAnswer: PromptAnswerSchema,
  SuspendedRun: SuspendedRunSchema,
  PendingOperation: PendingOperationSchema,
  ToolDefinitionView: ToolDefinitionViewSchema,
  McpServerView: McpServerViewSchema,
  KeyInfo: KeyInfoSchema,
  TenantQuotas: TenantQuotasSchema,
};

/** A JSON object of any members: `additionalProperties: true`, so generated clients type it as an open record. */
const openObject = (description: string): JsonSchema => ({ type: "object", additionalProperties: true, description });

/**
 * Explicit JSON Schemas by valibot schema object: `v.custom` schemas cannot be converted, and the
 * numeric query values arrive as digit strings the routes turn into numbers, documented as the
 * numbers a client sends (`?limit=100` is a query string either way) with the bounds the routes enforce.
 */
export const EXPLICIT = new Map<unknown, JsonSchema>([
  [JsonValueSchema, { description: "Any JSON value (finite numbers, at most 64 levels deep)." }],
  // The aliases (newestFirst, oldestFirst) stay accepted but are not advertised: one list-order vocabulary.
  [BranchOrderQuerySchema, { enum: ["asc", "desc"], description: "`asc` oldest first, `desc` newest first (the default)." }],
  [JsonObjectSchema, openObject("A JSON object.")],
  [ExportedEntrySchema, { $ref: "#/components/schemas/Entry" }],
  [
    ExportedBranchesObjectSchema,
    {
      type: "object",
      propertyNames: { pattern: "^(?!\\.\\.?$)[A-Za-z0-9_.-]{1,128}$" },
      additionalProperties: { type: ["string", "null"] },
      description: `Branch name → tip entry id (null: an empty branch), at most ${SESSION_LIMITS.branches} branches.`,
    },
  ],
  [
    ToolParametersSchema,
    {
      ...openObject(`An object JSON Schema of the tool's arguments (at most ${MAX_TOOL_PARAMETERS_BYTES} bytes of JSON).`),
      required: ["type"],
      properties: { type: { const: "object" } },
    },
  ],
  [HeadersObjectSchema, { type: "object", additionalProperties: { type: "string" }, description: `Static HTTP headers by name (at most ${MAX_MCP_HEADERS}).` }],
  [
    StreamHeadersObjectSchema,
    {
      type: "object",
      propertyNames: { maxLength: 256 },
      additionalProperties: { type: "string", maxLength: 4096 },
      description: `Sent with every provider request, by name: at most ${MAX_STREAM_HEADERS} (not __proto__, constructor or prototype).`,
    },
  ],
  [
    StreamHeadersPatchObjectSchema,
    {
      type: "object",
      propertyNames: { maxLength: 256 },
      additionalProperties: { type: ["string", "null"], maxLength: 4096 },
      description: `Merged by name: a string sets one, null removes it; at most ${MAX_STREAM_HEADERS} named (not __proto__, constructor or prototype).`,
    },
  ],
  [ReplayMapObjectSchema, { type: "object", additionalProperties: { enum: ["never", "safe"] }, description: "Replay policy by tool name on the server (the others \"never\")." }],
  [
    MetadataObjectSchema,
    {
      type: "object",
      propertyNames: { pattern: "^[A-Za-z0-9_.-]{1,64}$" },
      additionalProperties: { type: "string", maxLength: SESSION_METADATA_LIMITS.valueLength },
      description: `Session metadata: at most ${SESSION_METADATA_LIMITS.keys} keys (1–${SESSION_METADATA_LIMITS.keyLength} characters of A–Z a–z 0–9 _ - ., not __proto__, constructor or prototype) to strings of at most ${SESSION_METADATA_LIMITS.valueLength} characters.`,
    },
  ],
  [
    MetadataPatchObjectSchema,
    {
      type: "object",
      propertyNames: { pattern: "^[A-Za-z0-9_.-]{1,64}$" },
      additionalProperties: { type: ["string", "null"], maxLength: SESSION_METADATA_LIMITS.valueLength },
      description: `A JSON Merge Patch of the session's metadata, naming at most ${2 * SESSION_METADATA_LIMITS.keys} keys: a string sets a key, null deletes it (keys as in metadata, not __proto__, constructor or prototype).`,
    },
  ],
  [LimitQuerySchema, { type: "integer", minimum: 1, maximum: PAGE_LIMIT_MAX, default: PAGE_LIMIT_DEFAULT, description: "Items per page." }],
  [WaitSecondsQuerySchema, { type: "number", minimum: 0, maximum: MAX_WAIT_SECONDS, description: "Seconds to wait, with at most 3 decimals." }],
  [FromSeqQuerySchema, { type: "integer", minimum: 0, description: "The first ledger seq to read." }],
  [
    UiPartInputSchema,
    {
      ...openObject("A part of an AI SDK `UIMessage`: `{ type: \"text\", text }`, `{ type: \"file\", mediaType, url }`, a tool part `tool-<name>` with its `toolCallId`, `state` and `output` or `errorText`, …; other members as the AI SDK defines them."),
      required: ["type"],
      properties: { type: { type: "string", minLength: 1, maxLength: 200 } },
    },
  ],
]);

export interface OpenApiHeader {
  description: string;
  schema: JsonSchema;
}

/** Response headers: `#/components/headers/<name>`. */
export const HEADERS = {
  RequestId: {
    description: "The server's id of this request, on every answer (an error body repeats it as `requestId`). A client's own `X-Request-Id` is not adopted: a well-formed one is echoed as `clientRequestId` in error bodies.",
    schema: { type: "string" },
  },
  IdempotencyReplayed: {
    description: "`true` when this answer replays the remembered success of an earlier request with the same `Idempotency-Key` (the request did not run again); absent otherwise.",
    schema: { type: "string", enum: ["true"] },
  },
  RetryAfter: { description: "Seconds to wait before retrying", schema: { type: "integer" } },
} satisfies Record<string, OpenApiHeader>;
