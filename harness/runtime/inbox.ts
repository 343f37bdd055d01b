import type { InboxItem, InboxKind, QueueMode } from "../../schema/lane.ts";

/** Which tags a drain point may take, and in which mode (reference §3.7 drain-point table). */
export interface Eligibility {
  write?: boolean;
  nextRun?: boolean;
  steer?: QueueMode;
  followUp?: QueueMode;
}

/**
 * Selects eligible items in global admission order. Tags define eligibility, never order:
 * "one-at-a-time" takes only the oldest item of that tag; remainders keep their relative order.
 */
export function selectEligible(inbox: readonly InboxItem[], eligibility: Eligibility): { selected: InboxItem[]; remainder: InboxItem[] } {
  const taken = new Set<InboxKind>();
  const selected: InboxItem[] = [];
  const remainder: InboxItem[] = [];
  for (const item of inbox) {
    if (eligible(item.kind, eligibility, taken)) {
      selected.push(item);
      taken.add(item.kind);
    } else {
      remainder.push(item);
    }
  }
  return { selected, remainder };
}

function eligible(kind: InboxKind, eligibility: Eligibility, taken: ReadonlySet<InboxKind>): boolean {
  switch (kind) {
    case "write":
      return eligibility.write === true;
    case "nextRun":
      return eligibility.nextRun === true;
    case "steer":
    case "followUp": {
      const mode = eligibility[kind];
      if (mode === undefined) return false;
      return mode === "all" || !taken.has(kind);
    }
  }
}

export function withoutItems(inbox: readonly InboxItem[], ids: ReadonlySet<string>): InboxItem[] {
  return inbox.filter((item) => !ids.has(item.entryId));
}
