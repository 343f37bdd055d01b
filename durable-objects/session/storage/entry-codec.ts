import type { NewEntry } from "../../../schema/entries.ts";
import type { Usage } from "../../../schema/usage.ts";
import { fullUsage, sparseUsage, USAGE_EXPANSION_BYTES, type StoredUsage } from "./usage-codec.ts";

// An entry's payload as stored (QUALITY P3, bytes retained per turn). A message entry whose payload
// is its message alone is stored as `[message]` instead of `{"message":…}` (a payload is otherwise
// always an object, so the array says which form it is). Two members of a message are stored
// shorter, each as a one-element array, a form neither can have (the message schema requires a
// number and an object), so the array marks the stored form unambiguously:
//   - `usage`, most of an assistant message's structure (~135 bytes) and mostly zeros (cache
//     counts, and every cost of an unpriced or local model): sparse, as the ledger rows are
//     (usage-codec.ts);
//   - `timestamp`, 13 digits: its distance from the entry's own commit time (the row's `ts`,
//     which a fork copies with the row), a few milliseconds.
// Rows written whole by earlier builds, or copied by a fork, read unchanged. A member is stored
// short only when restoring it gives back the same JSON text, so every read answers byte-for-byte
// what was committed.

type StoredUsageMarker = [StoredUsage];
type StoredTimestampMarker = [number];

/** At most how many bytes restoring adds to a stored message (page budgets: json-pages.ts). */
export const MESSAGE_EXPANSION_BYTES = USAGE_EXPANSION_BYTES + 24 + `{"message":}`.length;

/** The part of an entry stored as JSON: all but its placement and structural columns. */
export function entryPayload(entry: NewEntry): object | undefined {
  if (entry.type === "custom") return entry.data === undefined ? undefined : { data: entry.data };
  // A full Entry is assignable to NewEntry: its stale seq/timestamp must never be stored, or they
  // would shadow the stamps this commit assigns when the row is decoded.
  const stamped: NewEntry & { seq?: unknown; timestamp?: unknown } = entry;
  const { id: _id, parentId: _parentId, type: _type, seq: _seq, timestamp: _timestamp, ...rest } = stamped;
  return rest;
}

/** The JSON-ready payload of `entry` committed at `ts`, in the short forms above where exact. */
export function storedEntryPayload(entry: NewEntry, ts: number): object | undefined {
  const payload = entryPayload(entry);
  if (entry.type !== "message" || payload === undefined) return payload;
  const message: Record<string, unknown> = { ...entry.message };
  const usage: Usage | undefined = "usage" in entry.message ? entry.message.usage : undefined;
  if (usage !== undefined) {
    const sparse = sparseUsage(usage);
    const marker: StoredUsageMarker = [sparse];
    if (JSON.stringify(fullUsage(sparse)) === JSON.stringify(usage)) message.usage = marker;
  }
  const timestamp = entry.message.timestamp;
  const distance = timestamp - ts;
  // Only where it is shorter: a caller's message may carry any time, 0 or 1 included.
  if (Number.isSafeInteger(timestamp) && Number.isSafeInteger(ts) && Number.isSafeInteger(distance) && `[${distance}]`.length < `${timestamp}`.length) {
    const marker: StoredTimestampMarker = [distance];
    message.timestamp = marker;
  }
  // Assigning to copied members keeps every key where it was: values change, not positions.
  const stored = { ...payload, message };
  return Object.keys(stored).length === 1 ? [message] : stored;
}

/** A stored payload committed at `ts` as the entry's payload object, short members restored. */
export function restoreEntryPayload(stored: unknown, ts: number): object {
  const payload: unknown = Array.isArray(stored) && stored.length === 1 ? { message: stored[0] } : stored;
  if (typeof payload !== "object" || payload === null) return {};
  if (!("message" in payload)) return payload;
  const message: unknown = payload.message;
  if (typeof message !== "object" || message === null) return payload;
  if ("usage" in message) {
    const usage: unknown = message.usage;
    if (Array.isArray(usage) && usage.length === 1 && isStoredUsage(usage[0])) Object.assign(message, { usage: fullUsage(usage[0]) });
  }
  if ("timestamp" in message) {
    const timestamp: unknown = message.timestamp;
    if (Array.isArray(timestamp) && timestamp.length === 1 && typeof timestamp[0] === "number") Object.assign(message, { timestamp: ts + timestamp[0] });
  }
  return payload;
}

/**
 * Whether a stored payload's text may be in a short form and so needs restoring before it is
 * answered as bytes. A false positive (the same characters inside a tool call's arguments or a
 * custom entry's data) costs only a parse: restoring then changes nothing.
 */
export function mayBeShort(payloadText: string): boolean {
  return payloadText.startsWith("[") || payloadText.includes(`"usage":[`) || payloadText.includes(`"timestamp":[`);
}

/** Restores a stored payload's text committed at `ts` (see above); other texts pass unchanged. */
export function restoreEntryPayloadText(payloadText: string, ts: number): string {
  if (!mayBeShort(payloadText)) return payloadText;
  return JSON.stringify(restoreEntryPayload(JSON.parse(payloadText), ts));
}

function isStoredUsage(value: unknown): value is StoredUsage {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
