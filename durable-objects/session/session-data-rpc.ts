import { isReservedNamespace, list, value } from "../../harness/session/addresses.ts";
import type { BranchScan } from "../../harness/session/branch.ts";
import { Session, type EntryQuery } from "../../harness/session/session.ts";
import type { ListElement, ListReadOptions, UsageScan } from "../../harness/session/storage.ts";
import type { Entry } from "../../schema/entries.ts";
import { PAGE_BYTES_MAX } from "../../schema/api-sessions.ts";
import type { RpcJson, RpcResult } from "../../schema/errors.ts";
import type { JsonValue } from "../../schema/json.ts";
import type { SessionStats, UsageRow } from "../../schema/usage.ts";
import type { Wire } from "../../schema/wire.ts";
import { asJson, asResult, parseWire, RpcError } from "../rpc-errors.ts";
import { JsonWriter } from "../sql/json-bytes.ts";
import { branchEntryPage, entryAnswer, entryPage, listPage, usagePage, valueAnswer, type ListPageOptions, type Page, type UsagePage } from "../sql/json-pages.ts";
import { migrate } from "../sql/migrations.ts";
import { SESSION_MIGRATIONS } from "../sql/session-migrations.ts";
import type { Session as SessionWire } from "../../schema/session.ts";
import { SqlSessionStorage } from "../sql/sql-session-storage.ts";
import { SessionHost, type BranchInfo, type NewBranchEntry, type SessionInfo, type SessionInit } from "./session-host.ts";

/** The public Session (spec/API.md): info plus settings, lanes, and which branches carry a lane. */
export type SessionView = SessionWire;

/** How long deletion waits for the harness to close before it closes storage regardless. */
const CLOSE_BOUND_MS = 5_000;

/** Session data over RPC: creation, deletion, branches, entries, usage, name, labels, values and lists. */
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

  /** The public Session view; opens the harness (lanes and settings live there). */
  async view(): Promise<Wire<RpcResult<SessionView>>> {
    return asResult(async () => {
      const harness = await this.harness();
      const info = this.describe();
      const lanes = harness.lanes();
      const laneNames = new Set(lanes.map((lane) => lane.name));
      return { ...info, settings: harness.settings(), branches: info.branches.map((branch) => ({ ...branch, lane: laneNames.has(branch.name) })), lanes };
    });
  }

  /**
   * Deletes the session and everything stored with it; `deleted: false` when there was none
   * (idempotent). No other event reaches the object meanwhile: the harness is closed first (lanes
   * sealed, the line drained; a live pass can commit nothing more), watchers are disconnected, then
   * the alarm and all storage are deleted. The empty schema is re-created so that later calls on
   * this instance answer SessionNotFound like any object that never held a session.
   */
  async deleteSession(): Promise<Wire<RpcResult<{ deleted: boolean }>>> {
    return asResult(() =>
      this.ctx.blockConcurrencyWhile(async () => {
        const opened = this.opened;
        this.opened = undefined;
        if (!opened && !SqlSessionStorage.open(this.ctx.storage)) return { deleted: false };
        if (opened) {
          await within(CLOSE_BOUND_MS, opened.runtime.harness().then((harness) => harness.close(), () => opened.session.close()));
          // Whatever is still running can commit nothing from here on.
          opened.storage.close();
        }
        for (const socket of this.ctx.getWebSockets()) {
          try {
            socket.close(1000, "Session deleted");
          } catch {
            // Already closing: nothing to tell it.
          }
        }
        await this.ctx.storage.deleteAlarm();
        await this.ctx.storage.deleteAll();
        migrate(this.ctx.storage, SESSION_MIGRATIONS);
        return { deleted: true };
      }),
    );
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

  /** Through the harness, so watchers get the `value_update` event. */
  async setName(name: string | null): Promise<Wire<RpcResult<{ name: string | null }>>> {
    return asResult(async () => {
      await (await this.harness()).setName(name ?? undefined);
      return { name };
    });
  }

  /** Through the harness (a `value_update` event); `null` removes the label. */
  async setLabel(entryId: string, label: string | null): Promise<Wire<RpcResult<{ entryId: string; label: string | null }>>> {
    return asResult(async () => {
      await (await this.harness()).setLabel(entryId, label ?? undefined);
      return { entryId, label };
    });
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

  // The REST API's reads answer JSON bytes, paged by count and by bytes (sql/json-pages.ts), so no
  // answer meets the platform's 32 MiB RPC limit, whatever the sizes of the entries and values. The
  // typed reads above serve tests and in-process tools.

  async entriesJson(query: Omit<EntryQuery, "limit"> & { limit: number }): Promise<RpcJson<Page<Entry>>> {
    return asJson(() => {
      this.session();
      const { limit, ...rest } = query;
      return entryPage(this.ctx.storage, rest, { limit, budget: PAGE_BYTES_MAX });
    });
  }

  async branchEntriesJson(name: string, scan: Omit<BranchScan, "limit"> & { limit: number }): Promise<RpcJson<Page<Entry>>> {
    return asJson(() => {
      const branch = this.session().branch(name);
      if (!branch) throw new RpcError({ code: "UnknownBranch", message: `Branch "${name}" does not exist` });
      const { limit, start = branch.getTipId(), ...rest } = scan;
      if (start === null) return new JsonWriter().json({ items: [], nextCursor: null }).finish();
      return branchEntryPage(this.ctx.storage, { ...rest, start }, { limit, budget: PAGE_BYTES_MAX });
    });
  }

  async entryJson(id: string): Promise<RpcJson<Entry>> {
    return asJson(() => {
      this.session();
      const entry = entryAnswer(this.ctx.storage, id);
      if (!entry) throw new RpcError({ code: "UnknownEntry", message: `Entry ${id} does not exist`, details: { entryId: id } });
      return entry;
    });
  }

  async usageJson(scan: { fromSeq?: number; limit: number }): Promise<RpcJson<UsagePage>> {
    return asJson(() => usagePage(this.ctx.storage, scan.fromSeq, this.session().getStats().usage, { limit: scan.limit, budget: PAGE_BYTES_MAX }));
  }

  /** `{ value, seq }`; an absent value is 404 NotFound (a value set to null is a value). */
  async valueJson(namespace: string, key: string): Promise<RpcJson<{ value: JsonValue; seq: number }>> {
    return asJson(() => {
      this.session();
      const found = valueAnswer(this.ctx.storage, appNamespace(namespace), key);
      if (!found) throw new RpcError({ code: "NotFound", message: `No value at ${namespace}/${key}`, details: { namespace, key } });
      return found;
    });
  }

  async listJson(namespace: string, key: string, options: ListPageOptions & { limit: number }): Promise<RpcJson<Page<{ seq: number; value: JsonValue }>>> {
    return asJson(() => {
      this.session();
      const { limit, ...read } = options;
      return listPage(this.ctx.storage, appNamespace(namespace), key, read, { limit, budget: PAGE_BYTES_MAX });
    });
  }
}

/** Waits for `work` (its failure included) at most `ms` milliseconds. */
async function within(ms: number, work: Promise<unknown>): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([work.then(() => undefined, () => undefined), bound]);
  clearTimeout(timer);
}

function appNamespace(namespace: string): string {
  if (isReservedNamespace(namespace)) {
    throw new RpcError({ code: "ReservedNamespace", message: `Namespace "${namespace}" is reserved for the runtime` });
  }
  return namespace;
}
