import { resourcesAddress, settingsAddress } from "../../harness/runtime/settings.ts";
import { isReservedNamespace, list, value } from "../../harness/session/addresses.ts";
import { sessionName } from "../../harness/session/builtin-addresses.ts";
import { setValue } from "../../harness/session/writes.ts";
import { scriptElementProblem } from "../../models/scripted/script-source.ts";
import { DEFAULT_SETTINGS } from "../../schema/settings.ts";
import { applySettingsPatch } from "../../schema/settings-patch.ts";
import type { BranchScan } from "../../harness/session/branch.ts";
import { Session, type EntryQuery } from "../../harness/session/session.ts";
import type { ListElement, ListReadOptions, UsageScan, Write } from "../../harness/session/storage.ts";
import type { Entry } from "../../schema/entries.ts";
import { PAGE_BYTES_MAX } from "../../schema/api-sessions.ts";
import { PAGE_LIMIT_DEFAULT } from "../../schema/api.ts";
import type { RpcJson, RpcResult } from "../../schema/errors.ts";
import type { JsonValue } from "../../schema/json.ts";
import type { SessionStats, UsageRow } from "../../schema/usage.ts";
import type { Wire } from "../../schema/wire.ts";
import { asJson, asResult, invalidInput, parseWire, RpcError } from "../rpc/rpc-errors.ts";
import { JsonWriter } from "./storage/json-bytes.ts";
import { branchEntryPage, entryAnswer, entryPage, listPage, usagePage, valueAnswer, type ListPageOptions, type Page, type UsagePage } from "./storage/json-pages.ts";
import type { BranchListing, CreatedSession, Session as SessionWire } from "../../schema/session.ts";
import type { ToolDefinitionInput } from "../../schema/tools.ts";
import { toolDefinition } from "../../tools/definitions.ts";
import { newToolSecret, storedToolDefinition, type ToolDefinitionContext } from "./tool-definition-input.ts";
import { branchPage, hasBranch, lanePage } from "./storage/branch-inventory.ts";
import { CreationSlots } from "./creation-slots.ts";
import { SqlSessionStorage } from "./storage/sql-session-storage.ts";
import { SessionHost, type BranchInfo, type SessionInfo, type SessionInit } from "./session-host.ts";

/** The public Session (spec/API.md): info plus settings, and the first page of its branches and lanes. */
export type SessionView = SessionWire;

/** A page of branches or lanes by name: `after` is the last name of the previous page. */
export interface NamePageQuery {
  limit?: number;
  after?: string;
}

/** What the session view embeds of each listing: the first page a listing answers by default. */
const EMBEDDED_PAGE = { limit: PAGE_LIMIT_DEFAULT, budget: PAGE_BYTES_MAX };

/** The object's KV key of the token of the request that created the session (see `SessionInit`). */
export const CREATION_TOKEN_KEY = "creationToken";

/** How long deletion waits for the harness to close before it closes storage regardless. */
const CLOSE_BOUND_MS = 5_000;

/** Session data over RPC: creation, deletion, branches, entries, usage, name, labels, values and lists. */
export abstract class SessionDataRpc extends SessionHost {
  /** The branch and lane caps, checked before the engine creates either. */
  protected readonly slots = new CreationSlots(this.ctx.storage);
  /** A fork's import runs in this object (session-fork.ts): creation of the same id is refused. */
  protected importing = false;

  /**
   * Creates the session in one atomic step: the schema, the metadata, the name, the settings and
   * the resources are written in one synchronous turn (one storage batch), so a failure leaves no
   * half-made session. A repeat of the creating request (same `creationToken`) gets the session it
   * created; any other creation of an existing session is `SessionExists`.
   */
  async create(init: SessionInit): Promise<Wire<RpcResult<CreatedSession>>> {
    return asResult(async () => {
      // Checked and sealed before the existence check: from that read to the writes that depend
      // on it, nothing awaits, so no other request can slip in between.
      const tools = init.tools === undefined ? undefined : await this.initialTools(init.sessionId, parseWire(init.tools));
      if (this.existingStorage()) {
        const token = this.ctx.storage.kv.get<string>(CREATION_TOKEN_KEY);
        if (init.creationToken === undefined || token !== init.creationToken) {
          throw new RpcError({ code: "SessionExists", message: `Session ${init.sessionId} already exists` });
        }
        return this.sessionView();
      }
      // A fork importing into this object holds no metadata until its last step, so the check
      // above cannot see it: its id is taken all the same.
      if (this.importing) throw new RpcError({ code: "SessionExists", message: `Session ${init.sessionId} is being created` });
      this.schema.create();
      const storage = SqlSessionStorage.create(this.ctx.storage, { id: init.sessionId, tenantId: init.tenantId, createdAt: Date.now() });
      const writes = [
        ...(init.name !== undefined ? [setValue(sessionName, init.name)] : []),
        ...(init.settings !== undefined ? [setValue(settingsAddress, applySettingsPatch(DEFAULT_SETTINGS, parseWire(init.settings)))] : []),
        ...(init.resources !== undefined ? [setValue(resourcesAddress, parseWire(init.resources))] : []),
        ...(tools?.writes ?? []),
      ];
      if (writes.length > 0) storage.commit(writes);
      if (init.creationToken !== undefined) this.ctx.storage.kv.put(CREATION_TOKEN_KEY, init.creationToken);
      const session = new Session(storage);
      this.opened = { session, storage, runtime: this.runtimeFor(session) };
      const view = await this.sessionView();
      return tools && Object.keys(tools.secrets).length > 0 ? { ...view, toolSecrets: tools.secrets } : view;
    });
  }

  /** What `PUT …/tools/{name}` checks and seals, for every tool of a creating request; fresh secrets for the http ones. */
  private async initialTools(sessionId: string, inputs: Record<string, ToolDefinitionInput>): Promise<{ writes: Write[]; secrets: Record<string, string> }> {
    const context = this.toolDefinitionContext(sessionId);
    const writes: Write[] = [];
    const secrets: Record<string, string> = {};
    for (const [name, input] of Object.entries(inputs)) {
      const secret = input.kind === "http" ? newToolSecret() : undefined;
      writes.push(setValue(toolDefinition(name), await storedToolDefinition(name, input, context, secret, `tools.${name}`)));
      if (secret !== undefined) secrets[name] = secret;
    }
    return { writes, secrets };
  }

  protected toolDefinitionContext(sessionId: string): ToolDefinitionContext {
    return { sessionId, secretsKey: this.env.SECRETS_KEY, allowLoopback: this.env.LOCAL_DEV === "on" };
  }

  async info(): Promise<Wire<RpcResult<SessionInfo>>> {
    return asResult(() => this.describe());
  }

  /** The public Session view; opens the harness (lanes and settings live there). */
  async view(): Promise<Wire<RpcResult<SessionView>>> {
    return asResult(() => this.sessionView());
  }

  /** Bounded whatever the session holds: the first page of branches and of lanes, with the cursors that continue them. */
  protected async sessionView(): Promise<SessionView> {
    const harness = await this.harness();
    const branches = branchPage(this.ctx.storage, undefined, EMBEDDED_PAGE);
    const lanes = lanePage(harness.lanes(), undefined, EMBEDDED_PAGE);
    return {
      ...this.summary(),
      settings: harness.settings(),
      branches: branches.items,
      branchesNextCursor: branches.nextCursor,
      lanes: lanes.items,
      lanesNextCursor: lanes.nextCursor,
    };
  }

  /**
   * Deletes the session and everything stored with it; `deleted: false` when there was none
   * (idempotent). No other event reaches the object meanwhile: the harness is closed first (lanes
   * sealed, the line drained; a live pass can commit nothing more), watchers are disconnected, then
   * the alarm and all storage are deleted. The schema is not re-created: the object holds nothing
   * again, and later calls answer SessionNotFound like any object that never held a session.
   */
  async deleteSession(): Promise<Wire<RpcResult<{ deleted: boolean }>>> {
    return asResult(() =>
      this.ctx.blockConcurrencyWhile(async () => {
        const opened = this.opened;
        this.opened = undefined;
        if (!opened && !this.existingStorage()) return { deleted: false };
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
        await this.dueWork.disarm();
        await this.ctx.storage.deleteAll();
        this.schema.forget();
        return { deleted: true };
      }),
    );
  }

  /** 409 BranchExists before the cap: an existing name adds nothing (the engine refuses it on the line). */
  async createBranch(name: string, at: string | null): Promise<Wire<RpcResult<BranchInfo>>> {
    return asResult(async () => {
      const session = this.session();
      const needs = { branch: !hasBranch(this.ctx.storage, name), lane: false };
      const branch = await this.slots.within(needs, () => session.createBranch(name, at));
      return { name: branch.name, tipId: branch.getTipId() };
    });
  }

  /** Branches by name, a page at a time (each row says whether a lane is bound to it). */
  async branches(query: NamePageQuery = {}): Promise<Wire<RpcResult<Page<BranchListing>>>> {
    return asResult(() => {
      this.session();
      return branchPage(this.ctx.storage, query.after, { limit: query.limit ?? PAGE_LIMIT_DEFAULT, budget: PAGE_BYTES_MAX });
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

  /** An entry's label (null when it has none); an unknown entry is UnknownEntry. */
  async getLabel(entryId: string): Promise<Wire<RpcResult<{ entryId: string; label: string | null }>>> {
    return asResult(() => {
      const session = this.session();
      if (!session.getEntry(entryId)) throw new RpcError({ code: "UnknownEntry", message: `Entry ${entryId} does not exist`, details: { entryId } });
      return { entryId, label: session.getLabel(entryId) ?? null };
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
      const parsed = parseWire(element);
      const problem = scriptElementProblem(namespace, key, parsed);
      if (problem !== undefined) throw invalidInput(`${namespace}/${key}`, problem);
      const result = await this.session().appendList(list<JsonValue>(appNamespace(namespace), key), parsed);
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

  // The REST API's reads answer JSON bytes, paged by count and by bytes (storage/json-pages.ts), so no
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
