import * as v from "valibot";
import type { Entry } from "./entries.ts";
import { utf8Length } from "./utf8.ts";

// The bounded transcript of a lane snapshot. A lane's compaction-bounded transcript can be far
// larger than one RPC reply or WebSocket message (entries reach 16 MiB each), so a snapshot carries
// only its newest part: the longest run of newest entries within both bounds below. The server's
// capture (harness/runtime/transcript-tail.ts) and the client fold (reduce-lane-snapshot.ts) both
// bound through this module, so folding a snapshot over later events still equals a later fresh
// snapshot: the longest suffix within the bounds of `T + e` is the bounded suffix of
// (longest suffix of `T` within the bounds) + `e`, because fitting is monotone in length.

/** At most this many transcript entries in a lane snapshot. */
export const SNAPSHOT_TRANSCRIPT_MAX_ENTRIES = 200;
/** At most this many bytes of transcript entries (each measured as UTF-8 JSON) in a lane snapshot. */
export const SNAPSHOT_TRANSCRIPT_MAX_BYTES = 4 * 1024 * 1024;

/**
 * Set on a snapshot whose transcript is a tail: `start` is the newest entry left out. Older entries
 * are read newest first with `GET …/branches/{lane}/entries?start={start}&stopAtType=compaction`.
 */
export const OlderEntriesSchema = v.object({ start: v.string() });
export type OlderEntries = v.InferOutput<typeof OlderEntriesSchema>;

export interface TranscriptTail {
  /** Oldest first. */
  transcript: Entry[];
  olderEntries?: OlderEntries;
}

// Entries are write-once and the fold shares them between replicas: each is measured once.
const measured = new WeakMap<Entry, number>();

/** An entry's size as the bounds count it: the UTF-8 length of its JSON text. */
export function entryBytes(entry: Entry): number {
  let bytes = measured.get(entry);
  if (bytes === undefined) {
    bytes = utf8Length(JSON.stringify(entry));
    measured.set(entry, bytes);
  }
  return bytes;
}

/**
 * The tail of a transcript given newest first (lazily: nothing past the first entry that does not
 * fit is pulled), returned oldest first.
 */
export function takeTranscriptTail(newestFirst: Iterable<Entry>): TranscriptTail {
  const kept: Entry[] = [];
  let bytes = 0;
  for (const entry of newestFirst) {
    const size = entryBytes(entry);
    if (kept.length >= SNAPSHOT_TRANSCRIPT_MAX_ENTRIES || bytes + size > SNAPSHOT_TRANSCRIPT_MAX_BYTES) {
      return { transcript: kept.reverse(), olderEntries: { start: entry.id } };
    }
    kept.push(entry);
    bytes += size;
  }
  return { transcript: kept.reverse() };
}

/**
 * Bounds an oldest-first transcript that may have grown past the bounds (the fold appended an
 * entry): the oldest entries are dropped until it fits, and the newest dropped one becomes
 * `olderEntries.start`. `olderEntries` is what the transcript already left out before.
 */
export function boundTranscript(transcript: Entry[], olderEntries: OlderEntries | undefined): TranscriptTail {
  let bytes = 0;
  let first = transcript.length;
  // Walk newest to oldest, keeping while within bounds: the same suffix takeTranscriptTail keeps.
  while (first > 0) {
    const entry = transcript[first - 1];
    if (entry === undefined) break;
    const size = entryBytes(entry);
    if (transcript.length - first >= SNAPSHOT_TRANSCRIPT_MAX_ENTRIES || bytes + size > SNAPSHOT_TRANSCRIPT_MAX_BYTES) break;
    bytes += size;
    first--;
  }
  if (first === 0) return olderEntries ? { transcript, olderEntries } : { transcript };
  const newestDropped = transcript[first - 1];
  const tail = transcript.slice(first);
  return newestDropped ? { transcript: tail, olderEntries: { start: newestDropped.id } } : { transcript: tail };
}
