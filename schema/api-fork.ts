import * as v from "valibot";
import { NewSessionIdSchema } from "./api.ts";
import { BranchNameSchema, EntryIdSchema } from "./api-sessions.ts";

/**
 * `POST /v1/sessions/{sid}/fork` (reference §1.11): a new session from one branch's path or from
 * the whole tree. `id` names the new session (default: generated).
 */
export const ForkSessionSchema = v.variant("scope", [
  v.strictObject({
    scope: v.literal("branch"),
    branch: BranchNameSchema,
    /** An entry on the branch's path (default: its tip). */
    entryId: v.optional(EntryIdSchema),
    /** `at` keeps the entry; `before` ends at its parent (which may be no entry at all). */
    position: v.optional(v.picklist(["before", "at"])),
    id: v.optional(NewSessionIdSchema),
  }),
  v.strictObject({
    scope: v.literal("tree"),
    id: v.optional(NewSessionIdSchema),
  }),
]);
export type ForkSession = v.InferOutput<typeof ForkSessionSchema>;

/** What a fork copies; the new session's id travels apart. */
export type ForkOptions = { scope: "branch"; branch: string; entryId?: string; position?: "before" | "at" } | { scope: "tree" };

export function forkOptionsOf(body: ForkSession): ForkOptions {
  if (body.scope === "tree") return { scope: "tree" };
  return {
    scope: "branch",
    branch: body.branch,
    ...(body.entryId !== undefined && { entryId: body.entryId }),
    ...(body.position !== undefined && { position: body.position }),
  };
}
