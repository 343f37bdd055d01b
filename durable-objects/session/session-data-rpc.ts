import { isReservedNamespace, list, value } from "../../harness/session/addresses.ts";
import type { BranchScan } from "../../harness/session/branch.ts";
import { Session, type EntryQuery } from "../../harness/session/session.ts";
import type { CommitResult, ListElement, ListReadOptions, UsageScan } from "../../harness/session/storage.ts";
import type { Entry } from "../../schema/entries.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { JsonValue } from "../../schema/json.ts";
import type { SessionStats, UsageRow } from "../../schema/usage.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult, parseWire, RpcError } from "../rpc-errors.ts";
import { SqlSessionStorage } from "../sql/sql-session-storage.ts";
import { SessionHost, type BranchInfo, type NewBranchEntry, type SessionInfo, type SessionInit } from "./session-host.ts";

/** Session data over RPC: creation, branches, entries, usage, name, labels, values and lists. */
export abstract class SessionDataRpc extends SessionHost {
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
      this.opened = { session, storage, runtime: this.runtimeFor(session) };
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

}

function appNamespace(namespace: string): string {
  if (isReservedNamespace(namespace)) {
    throw new RpcError({ code: "ReservedNamespace", message: `Namespace "${namespace}" is reserved for the runtime` });
  }
  return namespace;
}
