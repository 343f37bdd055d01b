import type { Entry } from "../../schema/entries.ts";
import { takeTranscriptTail, type TranscriptTail } from "../../schema/transcript-bounds.ts";
import type { SessionReader } from "../session/mutation.ts";

/**
 * The bounded transcript tail of a lane snapshot (schema/transcript-bounds.ts), read one entry at
 * a time from the tip toward the newest compaction (included), so a capture reads at most one
 * entry past the bounds, never the whole compaction-bounded transcript.
 */
export function readTranscriptTail(m: SessionReader, tipId: string | null): TranscriptTail {
  return takeTranscriptTail(walkToCompaction(m, tipId));
}

function* walkToCompaction(m: SessionReader, tipId: string | null): Generator<Entry, void, undefined> {
  let id = tipId;
  while (id !== null) {
    const entry = m.getEntries([id]).get(id);
    if (!entry) throw new Error(`Invariant: transcript entry ${id} is missing`);
    yield entry;
    if (entry.type === "compaction") return;
    id = entry.parentId;
  }
}
