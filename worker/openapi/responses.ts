import * as v from "valibot";
import { EntrySchema } from "../../schema/entries.ts";
import { ApiErrorSchema } from "../../schema/errors.ts";
import { JsonValueSchema } from "../../schema/json.ts";
import { UsageRowSchema, UsageTotalsSchema } from "../../schema/usage.ts";

// Answer shapes for the document, composed from the schemas the runtime already keeps (entries,
// usage rows, JSON values, errors). Routes whose answers have no valibot schema are documented by
// description only.

/** `{ items, nextCursor }`: one page of a listing (`nextCursor` null on the last page). */
const page = <S extends v.GenericSchema>(item: S) => v.object({ items: v.array(item), nextCursor: v.nullable(v.string()) });

export const EntryPageSchema = page(EntrySchema);

export const ListPageSchema = page(v.object({ seq: v.number(), value: JsonValueSchema }));

/** `GET …/branches`: `lane` says whether a lane is bound to the branch. */
export const BranchPageSchema = page(v.object({ name: v.string(), tipId: v.nullable(v.string()), lane: v.boolean() }));

export const StoredValueSchema = v.object({ value: JsonValueSchema, seq: v.number() });

export const SeqSchema = v.object({ seq: v.number() });

export const UsagePageSchema = v.object({
  rows: v.array(UsageRowSchema),
  totals: UsageTotalsSchema,
  nextFromSeq: v.nullable(v.number()),
});

/** The error body of ARCHITECTURE D16, as `errorResponse` (worker/http-error.ts) writes it. */
export const ErrorBodySchema = v.object({
  error: v.intersect([ApiErrorSchema, v.object({ requestId: v.optional(v.string()), clientRequestId: v.optional(v.string()) })]),
});
