import { IdSchema } from "../../schema/api.ts";
import {
  CreatedImportSchema,
  CreateImportSchema,
  ExportLineSchema,
  IMPORT_BODY_MAX_BYTES,
  ImportIdSchema,
  ImportPartAnswerSchema,
  ImportQuerySchema,
  PartNumberSchema,
} from "../../schema/data-export.ts";
import { CreatedSessionSchema } from "../../schema/session.ts";
import { SESSION_ERRORS, type CatalogRoute } from "./catalog-types.ts";

// spec/API.md "Data lifecycle": worker/routes/data.ts (docs/data.md).

const MIB = 1024 * 1024;
const FORMAT = "JSON Lines (docs/data.md): a `session` header, `entry` lines in seq order, then `value`, `item`, `label` and `result` lines, and an `end` line with the counts.";
const CHECKED =
  "Each line is checked as it arrives (422 `InvalidImport` with `details.line` and `details.reason`); the whole is checked like a creation (models the tenant may use, tools, branches on entries, lanes on branches).";
const IMPORT = { importId: ImportIdSchema };
const IMPORT_ERRORS = ["ImportNotFound", "InvalidImport", "ImportPartOutOfOrder", "SessionClosed"] as const;

export const dataCatalog: readonly CatalogRoute[] = [
  {
    method: "get", path: "/v1/sessions/{sid}/export", operationId: "exportSession", tag: "Sessions", auth: "tenant",
    summary: "Export the session as JSON Lines", description: `${FORMAT} Streamed page by page; entries up to the last one written when the export began.`,
    pathParams: { sid: IdSchema },
    responses: { 200: { description: "The session, one JSON object per line", schema: ExportLineSchema, content: "ndjson" } },
    errors: [...SESSION_ERRORS],
  },
  {
    method: "post", path: "/v1/sessions/import", operationId: "importSession", tag: "Sessions", auth: "tenant",
    summary: "Import a session from its JSON Lines export",
    description: `Body: an export, at most ${IMPORT_BODY_MAX_BYTES / MIB} MiB (413 beyond; larger ones go in parts through /v1/imports). ${CHECKED} Nothing is visible before the whole is written. Runs and usage are not imported; http tools get new secrets, in \`toolSecrets\` of this answer only. With an Idempotency-Key, a repeat answers the session the first made (the body is a stream and is not compared).`,
    query: ImportQuerySchema, lines: ExportLineSchema, idempotent: true,
    responses: { 201: { description: "The new Session, with `toolSecrets` when it defines http tools", schema: CreatedSessionSchema } },
    errors: ["SessionExists", "InvalidImport", "UnknownModel", "UnknownTool", "DeferredUnsupported", "PayloadTooLarge", "SessionClosed"],
  },
  {
    method: "post", path: "/v1/imports", operationId: "createImport", tag: "Sessions", auth: "tenant",
    summary: "Begin an import in parts",
    description: "Stages an import for the session `id` (or a new id): send the parts with `PUT …/parts/{n}`, then commit. Nothing is visible before the commit; an import not committed within 24 h is deleted.",
    body: CreateImportSchema, example: {}, idempotent: true,
    responses: { 201: { description: "`{ importId, sessionId, expiresAt }`", schema: CreatedImportSchema } },
    errors: ["SessionExists", "SessionClosed"],
  },
  {
    method: "put", path: "/v1/imports/{importId}/parts/{part}", operationId: "putImportPart", tag: "Sessions", auth: "tenant",
    summary: "Send one part of an import",
    description: `Parts are numbered 1, 2, … and sent in order, each whole lines of the export, at most ${IMPORT_BODY_MAX_BYTES / MIB} MiB. A part already written is not written again (\`repeated: true\`); one out of order is 409 \`ImportPartOutOfOrder\` (\`details.expected\`). A part refused (422) or cut short leaves nothing of it: send it again. A part with no line (an empty body) is 422 \`InvalidImport\` (\`details.reason\` \`empty_part\`). ${CHECKED}`,
    pathParams: { ...IMPORT, part: PartNumberSchema }, lines: ExportLineSchema,
    responses: { 200: { description: "`{ part, lines, repeated }`", schema: ImportPartAnswerSchema } },
    errors: [...IMPORT_ERRORS, "PayloadTooLarge"],
  },
  {
    method: "post", path: "/v1/imports/{importId}/commit", operationId: "commitImport", tag: "Sessions", auth: "tenant",
    summary: "Commit an import: the session appears",
    description: "Checks the whole (an end line, branches on entries, lanes on branches, models and tools) and makes the session exist in one step. A repeat after success answers the session again (without `toolSecrets`).",
    pathParams: IMPORT,
    responses: { 201: { description: "The new Session, with `toolSecrets` when it defines http tools", schema: CreatedSessionSchema } },
    errors: [...IMPORT_ERRORS, "UnknownModel", "UnknownTool", "DeferredUnsupported"],
  },
];
