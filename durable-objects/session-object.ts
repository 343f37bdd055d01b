import { DurableObject } from "cloudflare:workers";
import { isReservedNamespace, list, value } from "../harness/session/addresses.ts";
import type { BranchScan } from "../harness/session/branch.ts";
import { branchTipInventoryPrefix } from "../harness/session/builtin-addresses.ts";
import { Session, type EntryQuery } from "../harness/session/session.ts";
import type { CommitResult, ListElement, ListReadOptions, UsageScan } from "../harness/session/storage.ts";
import type { Entry } from "../schema/entries.ts";
import type { RpcResult } from "../schema/errors.ts";
import type { Wire } from "../schema/wire.ts";
import type { JsonValue } from "../schema/json.ts";
import type { AgentMessage } from "../schema/messages.ts";
import type { SessionStats, UsageRow } from "../schema/usage.ts";
import { asResult, parseWire, RpcError } from "./rpc-errors.ts";
import { migrate } from "./sql/migrations.ts";
import { SESSION_MIGRATIONS } from "./sql/session-migrations.ts";
import { SqlSessionStorage } from "./sql/sql-session-storage.ts";

export interface SessionInit {
  tenantId: string;
  sessionId: string;
  name?: string;
}

export interface SessionInfo {
  id: string;
  tenantId: string;
  name: string | null;
  createdAt: number;
  parentSessionId?: string;
  stats: SessionStats;
  branches: BranchInfo[];
}

export interface BranchInfo {
  name: string;
  tipId: string | null;
}

export type NewBranchEntry = { message: AgentMessage } | { customType: string; data?: JsonValue };

/**
 * One session per object, named `${tenantId}:${sessionId}` (ARCHITECTURE D2). A thin shell: it
 * runs migrations, opens the Session over its SQLite storage, and exposes semantic RPC methods whose
 * expected failures come back as tagged values. Tenant and session ids live in the object's own
 * storage, never parsed from `ctx.id.name` (absent in cold alarms, partykit#333).
 */
export class SessionObject extends DurableObject<Env> {
  private opened: { session: Session; storage: SqlSessionStorage } | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // Synchronous SQL in the constructor blocks other events until it returns; cheap when current.
    migrate(ctx.storage, SESSION_MIGRATIONS);
  }

  async create(init: SessionInit): Promise<Wire<RpcResult<SessionInfo>>> {
    return asResult(async () => {
      if (SqlSessionStorage.open(this.ctx.storage)) {
        throw new RpcError({ code: "SessionExists", message: `Session ${init.sessionId} already exists` });
      }
      const storage = SqlSessionStorage.create(this.ctx.storage, {
        id: init.sessionId,
        tenantId: init.tenantId,
        createdAt: Date.now(),
      });
      const session = new Session(storage);
      this.opened = { session, storage };
      if (init.name !== undefined) await session.setName(init.name);
      return this.describe();
    });
  }

  async info(): Promise<Wire<RpcResult<SessionInfo>>> {
    return asResult(() => this.describe());
  }

  async createBranch(name: string, at: string | null): Promise<Wire<RpcResult<BranchInfo>>> {
    return asResult(async () => {
      const branch = await this.session().createBranch(name, at);
      return { name: branch.name, tipId: branch.getTipId() };
    });
  }

  async branches(): Promise<Wire<RpcResult<BranchInfo[]>>> {
    return asResult(() => this.listBranches());
  }

  async appendToBranch(name: string, body: Wire<NewBranchEntry>): Promise<Wire<RpcResult<{ entryId: string }>>> {
    return asResult(async () => {
      const entry = parseWire(body);
      const branch = this.session().branch(name);
      if (!branch) throw new RpcError({ code: "UnknownBranch", message: `Branch "${name}" does not exist` });
      const entryId =
        "message" in entry
          ? await branch.appendMessage(entry.message)
          : await branch.appendCustomEntry(entry.customType, entry.data);
      return { entryId };
    });
  }

  async scanBranch(name: string, scan: BranchScan = {}): Promise<Wire<RpcResult<Entry[]>>> {
    return asResult(() => {
      const branch = this.session().branch(name);
      if (!branch) throw new RpcError({ code: "UnknownBranch", message: `Branch "${name}" does not exist` });
      return branch.findEntries(scan);
    });
  }

  async getEntry(id: string): Promise<Wire<RpcResult<Entry>>> {
    return asResult(() => {
      const entry = this.session().getEntry(id);
      if (!entry) throw new RpcError({ code: "UnknownEntry", message: `Entry ${id} does not exist` });
      return entry;
    });
  }

  async findEntries(query: EntryQuery = {}): Promise<Wire<RpcResult<Entry[]>>> {
    return asResult(() => this.session().findEntries(query));
  }

  async scanUsage(scan: UsageScan = {}): Promise<Wire<RpcResult<UsageRow[]>>> {
    return asResult(() => this.openStorage().scanUsage(scan));
  }

  async stats(): Promise<Wire<RpcResult<SessionStats>>> {
    return asResult(() => this.session().getStats());
  }

  async setName(name: string | null): Promise<Wire<RpcResult<CommitResult>>> {
    return asResult(() => this.session().setName(name ?? undefined));
  }

  async setLabel(entryId: string, label: string | null): Promise<Wire<RpcResult<CommitResult>>> {
    return asResult(() => this.session().setLabel(entryId, label ?? undefined));
  }

  // Application values and lists: `pi` and `pi.*` belong to the runtime and are refused here.

  async getValue(namespace: string, key: string): Promise<Wire<RpcResult<{ value: JsonValue; seq: number } | null>>> {
    return asResult(() => {
      const stored = this.session().getValue(value<JsonValue>(appNamespace(namespace), key));
      return stored ? { value: stored.value, seq: stored.seq } : null;
    });
  }

  async setValue(namespace: string, key: string, next: Wire<JsonValue>): Promise<Wire<RpcResult<{ seq: number }>>> {
    return asResult(async () => {
      const result = await this.session().setValue(value<JsonValue>(appNamespace(namespace), key), parseWire(next));
      return { seq: result.firstSeq };
    });
  }

  async deleteValue(namespace: string, key: string): Promise<Wire<RpcResult<{ seq: number }>>> {
    return asResult(async () => {
      const result = await this.session().deleteValue(value<JsonValue>(appNamespace(namespace), key));
      return { seq: result.firstSeq };
    });
  }

  async appendList(namespace: string, key: string, element: Wire<JsonValue>): Promise<Wire<RpcResult<{ seq: number }>>> {
    return asResult(async () => {
      const result = await this.session().appendList(list<JsonValue>(appNamespace(namespace), key), parseWire(element));
      return { seq: result.firstSeq };
    });
  }

  async readList(namespace: string, key: string, options: ListReadOptions = {}): Promise<Wire<RpcResult<ListElement<JsonValue>[]>>> {
    return asResult(() => this.session().readList(list<JsonValue>(appNamespace(namespace), key), options));
  }

  async deleteList(namespace: string, key: string): Promise<Wire<RpcResult<{ seq: number }>>> {
    return asResult(async () => {
      const result = await this.session().deleteList(list<JsonValue>(appNamespace(namespace), key));
      return { seq: result.firstSeq };
    });
  }

  /** The hosted Session; engine code in tests reaches it through `runInDurableObject`. */
  session(): Session {
    return this.open().session;
  }

  private openStorage(): SqlSessionStorage {
    return this.open().storage;
  }

  private open(): { session: Session; storage: SqlSessionStorage } {
    if (this.opened && !this.opened.session.closed) return this.opened;
    const storage = SqlSessionStorage.open(this.ctx.storage);
    if (!storage) throw new RpcError({ code: "SessionNotFound", message: "Session not found" });
    this.opened = { session: new Session(storage), storage };
    return this.opened;
  }

  private describe(): SessionInfo {
    const { session, storage } = this.open();
    const { metadata } = session;
    return {
      id: metadata.id,
      tenantId: storage.tenantId,
      name: session.getName() ?? null,
      createdAt: metadata.createdAt,
      ...(metadata.parentSessionId !== undefined && { parentSessionId: metadata.parentSessionId }),
      stats: session.getStats(),
      branches: this.listBranches(),
    };
  }

  private listBranches(): BranchInfo[] {
    return this.session()
      .scanValues(branchTipInventoryPrefix())
      .map((tip) => ({ name: tip.address.key, tipId: tip.value }));
  }
}

function appNamespace(namespace: string): string {
  if (isReservedNamespace(namespace)) {
    throw new RpcError({ code: "ReservedNamespace", message: `Namespace "${namespace}" is reserved for the runtime` });
  }
  return namespace;
}
