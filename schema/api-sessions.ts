import * as v from "valibot";
import { AgentReferenceSchema } from "./agent-binding.ts";
import { EntryLabelTextSchema, IdSchema, LimitQuerySchema } from "./api.ts";
import { ENTRY_TYPES, type EntryType } from "./entries.ts";
import { JsonValueSchema } from "./json.ts";
import { AgentMessageInputSchema } from "./messages.ts";
import { HarnessSettingsPatchSchema } from "./settings-patch.ts";
import { SessionMetadataPatchSchema } from "./session-metadata.ts";

// Parameters and bodies of spec/API.md "Sessions" (entries, labels, usage, values, lists, PATCH)
// and "Branches". The front worker validates with these before any object is touched.

/**
 * Pages also end before the item that would take them past this many bytes of JSON (a page ends
 * early with a `nextCursor`); an item larger than this (entries go up to 16 MiB) comes alone.
 */
export const PAGE_BYTES_MAX = 8 * 1024 * 1024;
/** Value and list addresses in paths: namespace 1–256 characters, key at most 256, no NUL. */
export const ADDRESS_PART_MAX = 256;

const noNul = (input: string): boolean => !input.includes("\u0000");
/** A name a path segment can carry: `.` and `..` are removed from URL paths (even percent-encoded) before any route sees them. */
export const notDotSegment = (input: string): boolean => input !== "." && input !== "..";

/** Entry ids in paths and bodies are validated like ids (UUIDv7 entry ids fit). */
export const EntryIdSchema = IdSchema;

/**
 * Branch names: 1–128 characters of A–Z a–z 0–9 _ - . (a little looser than ids; a lane's branch
 * carries the lane's name, which is an id, so every lane branch is addressable here).
 */
export const BranchNameSchema = v.pipe(
  v.string(),
  v.regex(/^(?!\.\.?$)[A-Za-z0-9_.-]{1,128}$/, "Branch names are 1–128 characters of A–Z a–z 0–9 _ - . (not . or .., which no path can name)"),
);

export const NamespaceSchema = v.pipe(
  v.string(),
  v.minLength(1, "The namespace may not be empty"),
  v.maxLength(ADDRESS_PART_MAX, `The namespace is at most ${ADDRESS_PART_MAX} characters`),
  v.check(noNul, "The namespace may not contain NUL"),
  v.check(notDotSegment, "The namespace may not be . or .. (no path can name it)"),
);
export const KeySchema = v.pipe(
  v.string(),
  // An empty path segment names no key: `…/values/app/` is not a route.
  v.minLength(1, "The key may not be empty (no path can name it)"),
  v.maxLength(ADDRESS_PART_MAX, `The key is at most ${ADDRESS_PART_MAX} characters`),
  v.check(noNul, "The key may not contain NUL"),
  v.check(notDotSegment, "The key may not be . or .. (no path can name it)"),
);
export const AddressParamsSchema = v.object({ namespace: NamespaceSchema, key: KeySchema });

/**
 * What one session may hold of what its clients create without limit otherwise. A lane's branch
 * is a branch, so a lane created on a new branch counts against both. A creation beyond either is
 * 422 LimitExceeded. Branches and lanes are never removed, so a full session stays full.
 */
export const SESSION_LIMITS = { branches: 10_000, lanes: 100 } as const;

// Opaque cursors: base64url of `<kind>:<position>`, the last returned item's seq (entries, list
// items) or name (branches, lanes). A cursor is exclusive in the query's order.

function encodeCursor(kind: "seq" | "name", position: string): string {
  return btoa(`${kind}:${position}`).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decodeCursor(cursor: string, kind: "seq" | "name"): string | undefined {
  try {
    const text = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
    return text.startsWith(`${kind}:`) ? text.slice(kind.length + 1) : undefined;
  } catch {
    return undefined;
  }
}

/** A cursor schema: `decode` turns the position into the query's bound, or undefined when invalid. */
function cursorSchema<T>(decode: (cursor: string) => T | undefined) {
  return v.pipe(
    v.string(),
    v.maxLength(256, "Invalid cursor"),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const position = decode(dataset.value);
      if (position === undefined) {
        addIssue({ message: "Invalid cursor" });
        return NEVER;
      }
      return position;
    }),
  );
}

export function encodeSeqCursor(seq: number): string {
  return encodeCursor("seq", String(seq));
}

export const SeqCursorSchema = cursorSchema((cursor) => {
  const seq = decodeCursor(cursor, "seq");
  return seq !== undefined && /^\d{1,15}$/.test(seq) ? { seq: Number(seq) } : undefined;
});

/** Branch and lane listings go by name (lane names are ids, which are branch names too). */
export function encodeNameCursor(name: string): string {
  return encodeCursor("name", name);
}

export const NameCursorSchema = cursorSchema((cursor) => {
  const name = decodeCursor(cursor, "name");
  return name !== undefined && v.is(BranchNameSchema, name) ? { name } : undefined;
});

const EntryTypeSchema = v.picklist(ENTRY_TYPES as [EntryType, ...EntryType[]]);
/** A custom entry's type, as every route that writes or filters one takes it (an import too). */
export const CustomTypeSchema = v.pipe(v.string(), v.minLength(1), v.maxLength(256));

/** `GET /v1/sessions/{sid}/entries?type&customType&order&limit&cursor` (session-wide, by seq). */
export const EntriesQuerySchema = v.object({
  type: v.optional(EntryTypeSchema),
  customType: v.optional(CustomTypeSchema),
  order: v.optional(v.picklist(["asc", "desc"]), "asc"),
  limit: LimitQuerySchema,
  cursor: v.optional(SeqCursorSchema),
});

/**
 * A branch scan's `order`: `asc` (oldest first) or `desc` (newest first, the default), the words
 * every other listing uses; the scan's own words `oldestFirst` / `newestFirst`, which this route
 * took first, stay accepted as aliases so that older clients keep working. Out: the scan's order.
 */
export const BranchOrderQuerySchema = v.pipe(
  v.picklist(["asc", "desc", "oldestFirst", "newestFirst"]),
  v.transform((order): "oldestFirst" | "newestFirst" => (order === "asc" || order === "oldestFirst" ? "oldestFirst" : "newestFirst")),
);

/**
 * `GET /v1/sessions/{sid}/branches/{name}/entries?start&stopAtType&stopAtId&type&customType&order&limit&cursor`:
 * the branch scan of reference §1.6 (root-ward path from `start`, default the tip; order; inclusive
 * stop; filters; exclusive cursor; limit).
 */
export const BranchEntriesQuerySchema = v.object({
  start: v.optional(EntryIdSchema),
  stopAtType: v.optional(EntryTypeSchema),
  stopAtId: v.optional(EntryIdSchema),
  type: v.optional(EntryTypeSchema),
  customType: v.optional(CustomTypeSchema),
  order: v.optional(BranchOrderQuerySchema, "desc"),
  limit: LimitQuerySchema,
  cursor: v.optional(SeqCursorSchema),
});

/** `GET /v1/sessions/{sid}/lists/{namespace}/{key}?cursor&order&limit`. */
export const ListQuerySchema = v.object({
  order: v.optional(v.picklist(["asc", "desc"]), "asc"),
  limit: LimitQuerySchema,
  cursor: v.optional(SeqCursorSchema),
});

/**
 * `GET /v1/sessions/{sid}/branches?limit&cursor` and `GET /v1/sessions/{sid}/lanes?limit&cursor`:
 * by name, in byte order.
 */
export const NamePageQuerySchema = v.object({
  limit: LimitQuerySchema,
  cursor: v.optional(NameCursorSchema),
});

/** `?fromSeq=`: a usage ledger seq (a non-negative integer). */
export const FromSeqQuerySchema = v.optional(v.pipe(v.string(), v.regex(/^\d{1,15}$/, "fromSeq is a non-negative integer"), v.transform(Number)));

/** `GET /v1/sessions/{sid}/usage?fromSeq&limit` (ledger rows with seq ≥ fromSeq, ascending). */
export const UsageQuerySchema = v.object({
  fromSeq: FromSeqQuerySchema,
  limit: LimitQuerySchema,
});

/**
 * `PATCH /v1/sessions/{sid}` `{ name?, settings?, metadata? }`; `name: null` removes the name;
 * `metadata` is a JSON Merge Patch over the session's metadata (`null` deletes a key).
 */
export const PatchSessionSchema = v.strictObject({
  name: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(500)))),
  settings: v.optional(HarnessSettingsPatchSchema),
  metadata: v.optional(SessionMetadataPatchSchema),
  /** Moves the whole session to this agent version (`"<id>"`: its latest); each lane captures it at its next operation. */
  agent: v.optional(AgentReferenceSchema),
});

/** `PUT /v1/sessions/{sid}/entries/{entryId}/label` `{ label }`. */
export const LabelSchema = v.strictObject({ label: EntryLabelTextSchema });

/** `POST /v1/sessions/{sid}/branches` `{ name, at: entryId | null }` (`at` absent = null, an empty branch). */
export const CreateBranchSchema = v.strictObject({
  name: BranchNameSchema,
  at: v.optional(v.nullable(EntryIdSchema), null),
});

/** `POST /v1/sessions/{sid}/branches/{name}/entries` `{ message }` or `{ customType, data? }`. */
export const NewBranchEntrySchema = v.union([
  v.strictObject({ message: AgentMessageInputSchema }),
  v.strictObject({ customType: CustomTypeSchema, data: v.optional(JsonValueSchema) }),
]);

/** The body of `PUT …/values/{namespace}/{key}` and `POST …/lists/{namespace}/{key}`: any JSON value. */
export const JsonBodySchema = JsonValueSchema;
