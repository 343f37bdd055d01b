import * as v from "valibot";
import { JsonValueSchema } from "./json.ts";
import { AgentMessageSchema } from "./messages.ts";
import { UsageSchema } from "./usage.ts";

// The four entry types of the write-once conversation tree (reference §1.2). `seq` and `timestamp`
// are stamped by storage at commit; callers hand in a NewEntry without them.

const base = {
  id: v.string(),
  parentId: v.nullable(v.string()),
  seq: v.number(),
  timestamp: v.number(),
};

export const MessageEntrySchema = v.object({
  ...base,
  type: v.literal("message"),
  message: AgentMessageSchema,
  terminate: v.optional(v.literal(true)),
});
export const CompactionEntrySchema = v.object({
  ...base,
  type: v.literal("compaction"),
  summary: v.string(),
  retainedTail: v.array(AgentMessageSchema),
  tokensBefore: v.number(),
  details: v.optional(JsonValueSchema),
  usage: v.optional(UsageSchema),
  fromHook: v.boolean(),
});
export const BranchSummaryEntrySchema = v.object({
  ...base,
  type: v.literal("branch_summary"),
  fromId: v.nullable(v.string()),
  summary: v.string(),
  details: v.optional(JsonValueSchema),
  usage: v.optional(UsageSchema),
  fromHook: v.boolean(),
});
export const CustomEntrySchema = v.object({
  ...base,
  type: v.literal("custom"),
  customType: v.string(),
  data: v.optional(JsonValueSchema),
});

export const EntrySchema = v.variant("type", [
  MessageEntrySchema,
  CompactionEntrySchema,
  BranchSummaryEntrySchema,
  CustomEntrySchema,
]);
export type MessageEntry = v.InferOutput<typeof MessageEntrySchema>;
export type CompactionEntry = v.InferOutput<typeof CompactionEntrySchema>;
export type BranchSummaryEntry = v.InferOutput<typeof BranchSummaryEntrySchema>;
export type CustomEntry = v.InferOutput<typeof CustomEntrySchema>;
export type Entry = v.InferOutput<typeof EntrySchema>;
export type EntryType = Entry["type"];
export const ENTRY_TYPES: readonly EntryType[] = ["message", "compaction", "branch_summary", "custom"];

type WithoutStamp<T> = T extends Entry ? Omit<T, "seq" | "timestamp"> : never;
/** An entry as callers hand it to a commit: storage stamps `seq` and `timestamp`. */
export type NewEntry = WithoutStamp<Entry>;
/** An entry without its payload: the branch-structure view of a scan. */
export interface EntryStructure {
  id: string;
  parentId: string | null;
  seq: number;
  timestamp: number;
  type: EntryType;
  customType?: string;
}
