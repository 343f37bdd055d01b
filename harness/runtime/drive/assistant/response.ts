import type { AssistantMessage as ProviderAssistant } from "@earendil-works/pi-ai";
import type { HarnessEvent } from "../../../../schema/lane.ts";
import type { AssistantMessage } from "../../../../schema/messages.ts";
import { boundedErrorText } from "../../../execution/provider-failure.ts";
import { branchTip, pendingAssistantFrames } from "../../../session/builtin-addresses.ts";
import type { SessionMutator } from "../../../session/mutation.ts";
import type { Write } from "../../../session/storage.ts";
import { zeroUsage } from "../../../session/usage.ts";
import { deleteList, insertEntry, insertUsage, setValue } from "../../../session/writes.ts";
import type { Committed } from "../../lane-command.ts";
import type { Pass } from "../pass.ts";

// A provider response as the session stores it, and what committing one always writes and tells.
// The live stream, the assistant settlement (live and recovered) and the deferred poll settlement
// all build on it; none of them imports another for it.

/** pi-ai's response, as the entry stores it (loose schema type: unknown provider fields survive), its error text bounded. */
export function storedAssistant(message: ProviderAssistant): AssistantMessage {
  return { ...message, ...(message.errorMessage !== undefined && { errorMessage: boundedErrorText(message.errorMessage) }) };
}

/** A frozen copy of the provider's live partial as a pending assistant (for an event or a snapshot). */
export function pendingCopy(partial: ProviderAssistant): AssistantMessage {
  return structuredClone({ ...storedAssistant(partial), stopReason: "pending" as const });
}

/**
 * What every settled response commits and tells (an assistant attempt or a deferred poll, §3.5):
 * the entry, its usage row under the reserved id, the tip, the frame-list delete (a reply that
 * settled within its first frame window stored none); then `message_end` (in the settlement's own
 * batch, §5.3: a live stream's partial stays the snapshot's streaming message until this commit,
 * and a recovered settlement ends the partial a watcher may hold from committed frames, §5.4),
 * `entry_added` and `usage`.
 */
export function settledResponse(
  pass: Pass,
  m: Pick<SessionMutator, "readList">,
  settled: { responseEntryId: string; usageId: string; parentId: string | null; message: AssistantMessage },
  options: { recovery: boolean; framed: boolean },
): { writes: Write[]; events: (done: Committed | undefined) => HarnessEvent[] } {
  const lane = pass.lane.name;
  const runId = pass.operationId;
  const { responseEntryId: R, message } = settled;
  const frames = pendingAssistantFrames(runId, R);
  const writes: Write[] = [
    insertEntry({ id: R, parentId: settled.parentId, type: "message", message }),
    insertUsage({ id: settled.usageId, usage: message.usage, entryId: R, adjustment: false }),
    setValue(branchTip(lane), R),
    ...(options.framed ? [deleteList(frames)] : []),
  ];
  const streamed = pass.lane.takeStreaming() !== undefined;
  const restoredPartial = options.recovery && m.readList(frames, { limit: 1 }).length > 0;
  const events = (done: Committed | undefined): HarnessEvent[] => [
    ...(streamed || restoredPartial ? [{ type: "message_end", lane, runId, message, entryId: R } satisfies HarnessEvent] : []),
    ...(done?.entries ?? [])
      .filter((entry) => entry.id === R)
      .map((entry): HarnessEvent => ({ type: "entry_added", lane, entry, ...(options.recovery && { recovery: true as const }) })),
    ...(done?.usage ?? []).map((row): HarnessEvent => ({ type: "usage", lane, row, totals: done?.commit.stats.usage ?? zeroUsage() })),
  ];
  return { writes, events };
}
