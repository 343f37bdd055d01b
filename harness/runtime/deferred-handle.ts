import type { DeferredHandle } from "../../schema/messages.ts";
import type { SessionReader } from "../session/mutation.ts";

/**
 * The handle a suspended run waits on (reference §3.11): the assistant entry that deferred holds
 * it, and the entry's time is when it was stored (`pollAfterMs` counts from there). Undefined when
 * the entry holds none.
 */
export function storedHandle(reader: Pick<SessionReader, "getEntries">, sourceEntryId: string): { handle: DeferredHandle; storedAt: number } | undefined {
  const entry = reader.getEntries([sourceEntryId]).get(sourceEntryId);
  const handle = entry?.type === "message" && entry.message.role === "assistant" ? entry.message.deferred : undefined;
  return entry && handle ? { handle, storedAt: entry.timestamp } : undefined;
}
