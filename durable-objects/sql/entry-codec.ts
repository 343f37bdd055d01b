import type { NewEntry } from "../../schema/entries.ts";
import type { Usage } from "../../schema/usage.ts";
import { fullUsage, sparseUsage, type StoredUsage } from "./usage-codec.ts";

// An entry's payload as stored (QUALITY P3, bytes retained per turn). A message's `usage` is most
// of an assistant message's structure (~135 bytes) and mostly zeros (cache counts, and every cost
// of an unpriced or local model); it is stored sparse, as the ledger rows are (usage-codec.ts),
// wrapped in a one-element array. No stored usage is ever an array (the message schema requires an
// object), so the array marks the sparse form unambiguously, and rows written whole by earlier
// builds, or copied by a fork, read unchanged. A usage is stored sparse only when restoring it
// gives back the same JSON text, so every read answers byte-for-byte what was committed.

type StoredUsageMarker = [StoredUsage];

/** The part of an entry stored as JSON: all but its placement and structural columns. */
export function entryPayload(entry: NewEntry): object | undefined {
  if (entry.type === "custom") return entry.data === undefined ? undefined : { data: entry.data };
  // A full Entry is assignable to NewEntry: its stale seq/timestamp must never be stored, or they
  // would shadow the stamps this commit assigns when the row is decoded.
  const stamped: NewEntry & { seq?: unknown; timestamp?: unknown } = entry;
  const { id: _id, parentId: _parentId, type: _type, seq: _seq, timestamp: _timestamp, ...rest } = stamped;
  return rest;
}

/** The JSON-ready payload of `entry`, with a message's usage in its sparse form when exact. */
export function storedEntryPayload(entry: NewEntry): object | undefined {
  const payload = entryPayload(entry);
  if (entry.type !== "message" || payload === undefined) return payload;
  const usage: Usage | undefined = "usage" in entry.message ? entry.message.usage : undefined;
  if (usage === undefined) return payload;
  const sparse = sparseUsage(usage);
  if (JSON.stringify(fullUsage(sparse)) !== JSON.stringify(usage)) return payload;
  const marker: StoredUsageMarker = [sparse];
  // Spreading keeps every key where it was: `usage` changes its value, not its position.
  return { ...payload, message: { ...entry.message, usage: marker } };
}

/** Restores, in place, a stored payload's sparse message usage; other payloads pass unchanged. */
export function restoreEntryPayload<T extends object>(payload: T): T {
  if (!("message" in payload)) return payload;
  const message: unknown = payload.message;
  if (typeof message !== "object" || message === null || !("usage" in message)) return payload;
  const stored: unknown = message.usage;
  if (Array.isArray(stored) && stored.length === 1 && isStoredUsage(stored[0])) {
    Object.assign(message, { usage: fullUsage(stored[0]) });
  }
  return payload;
}

/**
 * Whether a stored payload's text may hold a sparse usage and so needs restoring before it is
 * answered as bytes. A false positive (the same characters inside a tool call's arguments) costs
 * only a parse: restoring then changes nothing.
 */
export function mayHoldStoredUsage(payloadText: string): boolean {
  return payloadText.includes(`"usage":[`);
}

/** Restores a stored payload's text (see above); other texts pass unchanged. */
export function restoreEntryPayloadText(payloadText: string): string {
  if (!mayHoldStoredUsage(payloadText)) return payloadText;
  const payload: unknown = JSON.parse(payloadText);
  if (typeof payload !== "object" || payload === null) return payloadText;
  return JSON.stringify(restoreEntryPayload(payload));
}

function isStoredUsage(value: unknown): value is StoredUsage {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
