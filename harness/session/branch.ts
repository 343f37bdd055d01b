import type { EntryType, Entry } from "../../schema/entries.ts";
import type { JsonValue } from "../../schema/json.ts";
import type { AgentMessage } from "../../schema/messages.ts";
import { branchTip } from "./builtin-addresses.ts";
import { InvalidBranch, InvalidMessage, UnknownBranch } from "./errors.ts";
import type { Value } from "./addresses.ts";
import type { IdGenerator } from "./ids.ts";
import type { MutationCallback } from "./mutation.ts";
import type { BranchOrder, StorageBranchScan, StoredValue } from "./storage.ts";
import { insertEntry, setValue } from "./writes.ts";

/** A scan along a branch; `start` defaults to the receiver's tip (reference §1.6). */
export interface BranchScan {
  start?: string;
  stopAtType?: EntryType;
  stopAtId?: string;
  type?: EntryType;
  customType?: string;
  order?: BranchOrder;
  limit?: number;
  cursor?: { seq: number };
}

export const BRANCH_NAME_MAX = 256;

export function validateBranchName(name: string): void {
  if (typeof name !== "string" || name.length === 0) throw new InvalidBranch(String(name), "empty");
  if (name.includes("\u0000")) throw new InvalidBranch(name, "nul");
  if (name.length > BRANCH_NAME_MAX) throw new InvalidBranch(name, "too_long");
}

/** An assistant that has not settled may never become an entry (reference §1.2). */
export function assertStorableMessage(message: AgentMessage): void {
  if (message.role === "assistant" && message.stopReason === "pending") throw new InvalidMessage("pending_assistant");
}

/** What a Branch reads and writes through; the Session has it (named here so this module does not import the session). */
export interface BranchSession {
  readonly idGenerator: IdGenerator;
  getValue<T>(address: Value<T>): StoredValue<T> | undefined;
  scanBranch(scan: StorageBranchScan): Entry[];
  mutate<T>(callback: MutationCallback<T>): Promise<T>;
}

/**
 * A data-only capability over one named path (reference §2.2): a movable tip and nothing else. A
 * raw append always parents the new entry to the current tip and moves the tip in the same commit.
 */
export class Branch {
  constructor(
    private readonly session: BranchSession,
    readonly name: string,
  ) {}

  getTipId(): string | null {
    const tip = this.session.getValue(branchTip(this.name));
    if (!tip) throw new UnknownBranch(this.name);
    return tip.value;
  }

  findEntries(scan: BranchScan = {}): Entry[] {
    const start = scan.start ?? this.getTipId();
    if (start === null) return [];
    return this.session.scanBranch({ ...scan, start });
  }

  findEntry(scan: BranchScan = {}): Entry | undefined {
    return this.findEntries({ ...scan, limit: 1 })[0];
  }

  async appendMessage(message: AgentMessage): Promise<string> {
    assertStorableMessage(message);
    return this.append((id, parentId) => ({ id, parentId, type: "message", message }));
  }

  appendCustomEntry(customType: string, data: JsonValue | undefined): Promise<string> {
    return this.append((id, parentId) => ({
      id,
      parentId,
      type: "custom",
      customType,
      ...(data !== undefined && { data }),
    }));
  }

  private async append(build: (id: string, parentId: string | null) => Parameters<typeof insertEntry>[0]): Promise<string> {
    // The id is reserved before the mutation, as every placement path does (reference §2.3).
    const id = this.session.idGenerator.next();
    const tipAddress = branchTip(this.name);
    await this.session.mutate((m) => {
      const tip = m.getValue(tipAddress);
      if (!tip) throw new UnknownBranch(this.name);
      m.commit([insertEntry(build(id, tip.value)), setValue(tipAddress, id)]);
    });
    return id;
  }
}
