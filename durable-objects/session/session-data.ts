import { isReservedNamespace, list, value } from "../../harness/session/addresses.ts";
import { sessionMetadata } from "../../harness/session/builtin-addresses.ts";
import type { SessionMetadata, SessionMetadataPatch } from "../../schema/session-metadata.ts";
import { scriptElementProblem } from "../../models/scripted/script-source.ts";
import type { ListElement, ListReadOptions, UsageScan } from "../../harness/session/storage.ts";
import { PAGE_BYTES_MAX } from "../../schema/api-sessions.ts";
import type { RpcJson, RpcResult } from "../../schema/errors.ts";
import type { JsonValue } from "../../schema/json.ts";
import type { SessionStats, UsageRow } from "../../schema/usage.ts";
import type { Wire } from "../../schema/wire.ts";
import { once, type ReceiptScope } from "../rpc/idempotency.ts";
import { asJson, asResult, invalidInput, parseWire, RpcError } from "../rpc/rpc-errors.ts";
import { listPage, usagePage, valueAnswer, type ListPageOptions, type Page, type UsagePage } from "./storage/json-pages.ts";
import { metadataPatchWrite } from "./metadata-patch.ts";
import type { SessionHost } from "./session-host.ts";

/** What this module reaches of the host (session-host.ts). */
type DataHost = Pick<SessionHost, "ctx" | "harness" | "openStorage" | "session">;

/** Session data over RPC: usage, stats, name, labels, and the application's values and lists. */
export class SessionData {
  constructor(private readonly host: DataHost) {}

  async scanUsage(scan: UsageScan = {}): Promise<Wire<RpcResult<UsageRow[]>>> {
    return asResult(() => this.host.openStorage().scanUsage(scan));
  }

  async stats(): Promise<Wire<RpcResult<SessionStats>>> {
    return asResult(() => this.host.session().getStats());
  }

  /**
   * Through the harness, so watchers get the `value_update` event. Answers the seq of the write,
   * by which the tenant's index keeps the newest of concurrent renames.
   */
  async setName(name: string | null): Promise<Wire<RpcResult<{ name: string | null; seq: number }>>> {
    return asResult(async () => {
      const { seq } = await (await this.host.harness()).setName(name ?? undefined);
      return { name, seq };
    });
  }

  /**
   * A JSON Merge Patch of the session's metadata, merged and bounded on the session's line (nothing
   * commits between the read and the write); a map beyond 16 keys is 422 LimitExceeded and nothing
   * is written. Answers the merged map and the seq of the value written (the stored one when the
   * patch changed nothing), by which the tenant's index keeps the newest of concurrent patches.
   */
  async updateMetadata(patch: SessionMetadataPatch): Promise<Wire<RpcResult<{ metadata: SessionMetadata; seq: number }>>> {
    return asResult(() =>
      this.host.session().mutate((m) => {
        const { metadata, writes } = metadataPatchWrite(m, patch);
        if (writes.length === 0) return { metadata, seq: m.getValue(sessionMetadata)?.seq ?? 0 };
        const { firstSeq } = m.commit(writes);
        return { metadata, seq: firstSeq };
      }),
    );
  }

  /** An entry's label (null when it has none); an unknown entry is UnknownEntry. */
  async getLabel(entryId: string): Promise<Wire<RpcResult<{ entryId: string; label: string | null }>>> {
    return asResult(() => {
      const session = this.host.session();
      if (!session.getEntry(entryId)) throw new RpcError({ code: "UnknownEntry", message: `Entry ${entryId} does not exist`, details: { entryId } });
      return { entryId, label: session.getLabel(entryId) ?? null };
    });
  }

  /** Through the harness (a `value_update` event); `null` removes the label. */
  async setLabel(entryId: string, label: string | null): Promise<Wire<RpcResult<{ entryId: string; label: string | null }>>> {
    return asResult(async () => {
      await (await this.host.harness()).setLabel(entryId, label ?? undefined);
      return { entryId, label };
    });
  }

  // Application values and lists: `pi` and `pi.*` belong to the runtime and are refused here.

  async getValue(namespace: string, key: string): Promise<Wire<RpcResult<{ value: JsonValue; seq: number } | null>>> {
    return asResult(() => {
      const stored = this.host.session().getValue(value<JsonValue>(appNamespace(namespace), key));
      return stored ? { value: stored.value, seq: stored.seq } : null;
    });
  }

  async setValue(namespace: string, key: string, next: Wire<JsonValue>): Promise<Wire<RpcResult<{ seq: number }>>> {
    return asResult(async () => {
      const result = await this.host.session().setValue(value<JsonValue>(appNamespace(namespace), key), parseWire(next));
      return { seq: result.firstSeq };
    });
  }

  async deleteValue(namespace: string, key: string): Promise<Wire<RpcResult<{ seq: number }>>> {
    return asResult(async () => {
      const result = await this.host.session().deleteValue(value<JsonValue>(appNamespace(namespace), key));
      return { seq: result.firstSeq };
    });
  }

  /** Appended once per claimed key (`receipt`, rpc/idempotency.ts): a repeat after a crash answers the first seq. */
  async appendList(namespace: string, key: string, element: Wire<JsonValue>, receipt?: ReceiptScope): Promise<Wire<RpcResult<{ seq: number }>>> {
    return asResult(async () => {
      const parsed = parseWire(element);
      const problem = scriptElementProblem(namespace, key, parsed);
      if (problem !== undefined) throw invalidInput(`${namespace}/${key}`, problem);
      return once(this.host.ctx.storage.sql, receipt, async () => {
        const result = await this.host.session().appendList(list<JsonValue>(appNamespace(namespace), key), parsed);
        return { seq: result.firstSeq };
      });
    });
  }

  async readList(namespace: string, key: string, options: ListReadOptions = {}): Promise<Wire<RpcResult<ListElement<JsonValue>[]>>> {
    return asResult(() => this.host.session().readList(list<JsonValue>(appNamespace(namespace), key), options));
  }

  async deleteList(namespace: string, key: string): Promise<Wire<RpcResult<{ seq: number }>>> {
    return asResult(async () => {
      const result = await this.host.session().deleteList(list<JsonValue>(appNamespace(namespace), key));
      return { seq: result.firstSeq };
    });
  }

  // The REST API's reads answer JSON bytes, paged by count and by bytes (storage/json-pages.ts), so no
  // answer meets the platform's 32 MiB RPC limit, whatever the sizes of the values. The typed reads
  // above serve tests and in-process tools.

  async usageJson(scan: { fromSeq?: number; limit: number }): Promise<RpcJson<UsagePage>> {
    return asJson(() => usagePage(this.host.ctx.storage, scan.fromSeq, this.host.session().getStats().usage, { limit: scan.limit, budget: PAGE_BYTES_MAX }));
  }

  /** `{ value, seq }`; an absent value is 404 NotFound (a value set to null is a value). */
  async valueJson(namespace: string, key: string): Promise<RpcJson<{ value: JsonValue; seq: number }>> {
    return asJson(() => {
      this.host.session();
      const found = valueAnswer(this.host.ctx.storage, appNamespace(namespace), key);
      if (!found) throw new RpcError({ code: "NotFound", message: `No value at ${namespace}/${key}`, details: { namespace, key } });
      return found;
    });
  }

  async listJson(namespace: string, key: string, options: ListPageOptions & { limit: number }): Promise<RpcJson<Page<{ seq: number; value: JsonValue }>>> {
    return asJson(() => {
      this.host.session();
      const { limit, ...read } = options;
      return listPage(this.host.ctx.storage, appNamespace(namespace), key, read, { limit, budget: PAGE_BYTES_MAX });
    });
  }
}

function appNamespace(namespace: string): string {
  if (isReservedNamespace(namespace)) {
    throw new RpcError({ code: "ReservedNamespace", message: `Namespace "${namespace}" is reserved for the runtime` });
  }
  return namespace;
}
