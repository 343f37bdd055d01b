import { isJsonObject, type JsonObject, type JsonValue } from "../../../../schema/json.ts";
import { isUsage } from "../../../../schema/usage.ts";
import type { ToolContent, ToolProgress } from "../../../execution/tools.ts";

// A call's progress checkpoint (reference §4.8): what `onUpdate(…, { checkpoint: true })` stores
// in `pi.pending.tool_output`, and what a restored call shows its watchers and is interrupted with.
// All three parts survive the round trip — content (text and image blocks), details and usage —
// so an interruption result places the usage the tool reported and the images it produced.

/** A progress checkpoint as stored. */
export function checkpointValue(progress: ToolProgress): JsonObject {
  return {
    content: progress.content.map((block): JsonObject => ({ ...block })),
    ...(progress.details !== undefined && { details: progress.details }),
    ...(progress.usage !== undefined && { usage: { ...progress.usage, cost: { ...progress.usage.cost } } }),
  };
}

/** A stored checkpoint read back; a block of another shape, or a usage out of bounds, is left out. */
export function readCheckpoint(stored: JsonObject): ToolProgress {
  return {
    content: toolContent(stored.content),
    ...(stored.details !== undefined && { details: stored.details }),
    ...(isUsage(stored.usage) && { usage: stored.usage }),
  };
}

/** The text and image blocks of a stored or posted tool result. */
export function toolContent(value: JsonValue | undefined): ToolContent {
  if (!Array.isArray(value)) return [];
  return value.flatMap((block): ToolContent => {
    if (!isJsonObject(block)) return [];
    if (block.type === "text" && typeof block.text === "string") return [{ type: "text", text: block.text }];
    if (block.type === "image" && typeof block.data === "string" && typeof block.mimeType === "string") return [{ type: "image", data: block.data, mimeType: block.mimeType }];
    return [];
  });
}
