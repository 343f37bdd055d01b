import * as v from "valibot";
import { IdSchema, NewSessionIdSchema } from "./api.ts";
import { BranchNameSchema, CustomTypeSchema, EntryIdSchema, KeySchema, LabelSchema, NamespaceSchema, SESSION_LIMITS } from "./api-sessions.ts";
import { AgentVersionRefSchema } from "./agent-binding.ts";
import { EntrySchema, type Entry } from "./entries.ts";
import { isRecord, JsonValueSchema } from "./json.ts";
import { LaneConfigurationSchema, OperationResultRecordSchema } from "./lane.ts";
import { LaneNameSchema } from "./lane-api.ts";
import { SessionMetadataSchema } from "./session-metadata.ts";
import { HarnessResourcesSchema, HarnessSettingsSchema } from "./settings.ts";
import { ToolDefinitionsByNameSchema } from "./tools.ts";

// The session export format (docs/data.md): JSON Lines, one object per line, each with a `type`.
// A `session` header, then `entry` lines in seq order, then `value`, `item`, `label` and `result`
// lines, then one `end` line whose counts let an importer tell a whole stream from a cut one.

/**
 * Branch name → tip entry id (null: an empty branch); a session's bounds as for creation. Read as
 * name-tip pairs, not by valibot's record, which would skip a branch named `constructor` or
 * `prototype` (a lane's name may be either): every branch comes back. (The OpenAPI document
 * describes the whole by its leading guard.)
 */
export const ExportedBranchesObjectSchema = v.custom<Record<string, unknown>>(isRecord, "branches must be an object of tips by branch name");
export const ExportedBranchesSchema = v.pipe(
  ExportedBranchesObjectSchema,
  v.transform((branches) => Object.entries(branches)),
  v.array(v.tuple([BranchNameSchema, v.nullable(EntryIdSchema)])),
  v.check((branches) => branches.length <= SESSION_LIMITS.branches, `A session holds at most ${SESSION_LIMITS.branches} branches`),
  v.transform((branches): Record<string, string | null> => Object.fromEntries(branches)),
);

export const EXPORT_FORMAT = "pi-session";
export const EXPORT_VERSION = 1;

/** One import request's body at most (spec/API.md "Data lifecycle"); larger exports go in parts. */
export const IMPORT_BODY_MAX_BYTES = 90 * 1024 * 1024;
/** One line at most: an entry's payload is bounded at 16 MiB; a line carries it with its framing. */
export const IMPORT_LINE_MAX_BYTES = 17 * 1024 * 1024;
/**
 * The highest entry seq an import takes: a session's seqs count its writes, so a real export's are
 * far below it, and the writes after an import need room above its last seq (seqs stay exact
 * integers, below 2^53).
 */
export const IMPORT_SEQ_MAX = 2 ** 48;
/** An import staged in parts and never committed is deleted this long after it began. */
export const IMPORT_ABANDON_MS = 24 * 60 * 60 * 1000;

const NameSchema = v.pipe(v.string(), v.maxLength(500));

export const ExportLaneSchema = v.strictObject({ name: LaneNameSchema, ...LaneConfigurationSchema.entries });

export const SessionLineSchema = v.strictObject({
  type: v.literal("session"),
  format: v.literal(EXPORT_FORMAT),
  version: v.literal(EXPORT_VERSION),
  id: IdSchema,
  name: v.nullable(NameSchema),
  createdAt: v.number(),
  metadata: SessionMetadataSchema,
  /** The agent version the exported session was bound to; an import records it only as history. */
  agent: v.optional(AgentVersionRefSchema),
  settings: HarnessSettingsSchema,
  resources: HarnessResourcesSchema,
  /** As `PUT …/tools/{name}` takes them: no secret, sealed or plain. */
  tools: ToolDefinitionsByNameSchema,
  /** Branch name → tip entry id (null: an empty branch); a session's bounds as for creation. */
  branches: ExportedBranchesSchema,
  /** A lane runs on the branch of its name. */
  lanes: v.pipe(v.array(ExportLaneSchema), v.maxLength(SESSION_LIMITS.lanes, `A session holds at most ${SESSION_LIMITS.lanes} lanes`)),
});
export type SessionLine = v.InferOutput<typeof SessionLineSchema>;

/**
 * An entry as `GET …/entries` answers it. Checked against the entry schema but kept as sent: a
 * message carries members the schema does not name (a provider's), and an import keeps them all.
 * Its id and parent are ids as every route takes them (an entry no route could name is refused).
 */
export const ExportedEntrySchema = v.custom<Entry>(
  (input) =>
    v.is(EntrySchema, input) &&
    v.is(EntryIdSchema, input.id) &&
    (input.parentId === null || v.is(EntryIdSchema, input.parentId)) &&
    // A custom type as the routes take it: one they refuse would be stored but never found by
    // `?customType=`, and a huge one would not fit its column.
    (input.type !== "custom" || v.is(CustomTypeSchema, input.customType)),
  "not an entry as GET …/entries answers it",
);
export const EntryLineSchema = v.strictObject({ type: v.literal("entry"), entry: ExportedEntrySchema });
export const ValueLineSchema = v.strictObject({ type: v.literal("value"), namespace: NamespaceSchema, key: KeySchema, value: JsonValueSchema });
export const ItemLineSchema = v.strictObject({ type: v.literal("item"), namespace: NamespaceSchema, key: KeySchema, value: JsonValueSchema });
export const LabelLineSchema = v.strictObject({ type: v.literal("label"), entryId: EntryIdSchema, label: LabelSchema.entries.label });
/** A settled operation's record (`GET …/operations/{id}`): exported as history, never imported. */
export const ResultLineSchema = v.strictObject({ type: v.literal("result"), record: OperationResultRecordSchema });
export const EndLineSchema = v.strictObject({
  type: v.literal("end"),
  entries: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
  values: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
  items: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
  labels: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
  results: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
});
export type EndLine = v.InferOutput<typeof EndLineSchema>;

export const ExportLineSchema = v.variant("type", [SessionLineSchema, EntryLineSchema, ValueLineSchema, ItemLineSchema, LabelLineSchema, ResultLineSchema, EndLineSchema]);
export type ExportLine = v.InferOutput<typeof ExportLineSchema>;

/** `POST /v1/imports` body. */
export const CreateImportSchema = v.optional(v.strictObject({ id: v.optional(NewSessionIdSchema) }), {});
export const ImportQuerySchema = v.strictObject({ id: v.optional(NewSessionIdSchema) });
export const ImportIdSchema = v.pipe(v.string(), v.regex(/^imp_[A-Za-z0-9_-]{1,64}\.[0-9a-f]{32}$/, "An import id is what POST /v1/imports answered"));
export const PartNumberSchema = v.pipe(v.string(), v.regex(/^[1-9][0-9]{0,5}$/, "A part number is a whole number from 1"), v.transform(Number));
export const CreatedImportSchema = v.object({ importId: v.string(), sessionId: v.string(), expiresAt: v.number() });
export const ImportPartAnswerSchema = v.object({ part: v.number(), lines: v.number(), repeated: v.boolean() });
