import * as v from "valibot";
import { pageSchema } from "../../schema/api.ts";
import { EntrySchema } from "../../schema/entries.ts";
import { ApiErrorSchema } from "../../schema/errors.ts";
import { JsonValueSchema } from "../../schema/json.ts";
import { BranchListingSchema } from "../../schema/session.ts";
import { UsageRowSchema, UsageTotalsSchema } from "../../schema/usage.ts";

// Answer shapes for the document that the runtime keeps no schema of its own for, composed from
// the schemas it does keep (entries, usage rows, JSON values, errors).

export const HealthSchema = v.object({ status: v.literal("ok") });

export const EntryPageSchema = pageSchema(EntrySchema);

export const ListPageSchema = pageSchema(v.object({ seq: v.number(), value: JsonValueSchema }));

/** `GET …/branches`: `lane` says whether a lane is bound to the branch. */
export const BranchPageSchema = pageSchema(BranchListingSchema);

export const StoredValueSchema = v.object({ value: JsonValueSchema, seq: v.number() });

export const SeqSchema = v.object({ seq: v.number() });

export const UsagePageSchema = v.object({
  rows: v.array(UsageRowSchema),
  totals: UsageTotalsSchema,
  nextFromSeq: v.nullable(v.number()),
});

/**
 * The error body of ARCHITECTURE D16, as `errorResponse` (worker/http-error.ts) writes it: every
 * request gets the server's `requestId` (also its `X-Request-Id` header); `clientRequestId` echoes
 * a client's own well-formed `X-Request-Id`.
 */
export const ErrorBodySchema = v.object({
  error: v.intersect([ApiErrorSchema, v.object({ requestId: v.string(), clientRequestId: v.optional(v.string()) })]),
});
