import type { BranchScan } from "../../harness/session/branch.ts";
import { type EntryQuery } from "../../harness/session/session.ts";
import type { Entry } from "../../schema/entries.ts";
import { PAGE_BYTES_MAX } from "../../schema/api-sessions.ts";
import { PAGE_LIMIT_DEFAULT } from "../../schema/api.ts";
import type { RpcJson, RpcResult } from "../../schema/errors.ts";
import type { Wire } from "../../schema/wire.ts";
import { once, type ReceiptScope } from "../rpc/idempotency.ts";
import { asJson, asResult, RpcError } from "../rpc/rpc-errors.ts";
import { JsonWriter } from "./storage/json-bytes.ts";
import { branchEntryPage, entryAnswer, entryPage, type Page } from "./storage/json-pages.ts";
import type { BranchListing } from "../../schema/session.ts";
import { branchPage, hasBranch } from "./storage/branch-inventory.ts";
import type { SessionHost, BranchInfo } from "./session-host.ts";
import type { CreationSlots } from "./creation-slots.ts";

/** A page of branches or lanes by name: `after` is the last name of the previous page. */
export interface NamePageQuery {
  limit?: number;
  after?: string;
}

/** What this module reaches of the host (session-host.ts). */
type BranchesHost = Pick<SessionHost, "ctx" | "session">;

/** Branches and entries: branch creation under the cap, listings and scans, entries by id and by query. */
export class SessionBranches {
  constructor(
    private readonly host: BranchesHost,
    /** The branch and lane caps, checked before the engine creates either. */
    private readonly slots: CreationSlots,
  ) {}

  /** 409 BranchExists before the cap: an existing name adds nothing (the engine refuses it on the line). */
  /** Created once per claimed key (`receipt`, rpc/idempotency.ts): a repeat after a crash answers the branch as created, not 409. */
  async createBranch(name: string, at: string | null, receipt?: ReceiptScope): Promise<Wire<RpcResult<BranchInfo>>> {
    return asResult(async () => {
      const session = this.host.session();
      return once(this.host.ctx.storage.sql, receipt, async () => {
        const needs = { branch: !hasBranch(this.host.ctx.storage, name), lane: false };
        const branch = await this.slots.within(needs, () => session.createBranch(name, at));
        return { name: branch.name, tipId: branch.getTipId() };
      });
    });
  }

  /** Branches by name, a page at a time (each row says whether a lane is bound to it). */
  async branches(query: NamePageQuery = {}): Promise<Wire<RpcResult<Page<BranchListing>>>> {
    return asResult(() => {
      this.host.session();
      return branchPage(this.host.ctx.storage, query.after, { limit: query.limit ?? PAGE_LIMIT_DEFAULT, budget: PAGE_BYTES_MAX });
    });
  }

  async scanBranch(name: string, scan: BranchScan = {}): Promise<Wire<RpcResult<Entry[]>>> {
    return asResult(() => {
      const branch = this.host.session().branch(name);
      if (!branch) throw new RpcError({ code: "UnknownBranch", message: `Branch "${name}" does not exist` });
      return branch.findEntries(scan);
    });
  }

  async getEntry(id: string): Promise<Wire<RpcResult<Entry>>> {
    return asResult(() => {
      const entry = this.host.session().getEntry(id);
      if (!entry) throw new RpcError({ code: "UnknownEntry", message: `Entry ${id} does not exist` });
      return entry;
    });
  }

  async findEntries(query: EntryQuery = {}): Promise<Wire<RpcResult<Entry[]>>> {
    return asResult(() => this.host.session().findEntries(query));
  }

  // The REST API's reads answer JSON bytes, paged by count and by bytes (storage/json-pages.ts), so no
  // answer meets the platform's 32 MiB RPC limit, whatever the sizes of the entries. The typed reads
  // above serve tests and in-process tools.

  async entriesJson(query: Omit<EntryQuery, "limit"> & { limit: number }): Promise<RpcJson<Page<Entry>>> {
    return asJson(() => {
      this.host.session();
      const { limit, ...rest } = query;
      return entryPage(this.host.ctx.storage, rest, { limit, budget: PAGE_BYTES_MAX });
    });
  }

  async branchEntriesJson(name: string, scan: Omit<BranchScan, "limit"> & { limit: number }): Promise<RpcJson<Page<Entry>>> {
    return asJson(() => {
      const session = this.host.session();
      const branch = session.branch(name);
      if (!branch) throw new RpcError({ code: "UnknownBranch", message: `Branch "${name}" does not exist` });
      // A start that names no entry is the client's mistake, not an empty branch: 404, as documented.
      if (scan.start !== undefined && session.getEntries([scan.start]).size === 0) {
        throw new RpcError({ code: "UnknownTarget", message: `Entry ${scan.start} does not exist`, details: { targetId: scan.start } });
      }
      const { limit, start = branch.getTipId(), ...rest } = scan;
      if (start === null) return new JsonWriter().json({ items: [], nextCursor: null }).finish();
      return branchEntryPage(this.host.ctx.storage, { ...rest, start }, { limit, budget: PAGE_BYTES_MAX });
    });
  }

  async entryJson(id: string): Promise<RpcJson<Entry>> {
    return asJson(() => {
      this.host.session();
      const entry = entryAnswer(this.host.ctx.storage, id);
      if (!entry) throw new RpcError({ code: "UnknownEntry", message: `Entry ${id} does not exist`, details: { entryId: id } });
      return entry;
    });
  }
}
