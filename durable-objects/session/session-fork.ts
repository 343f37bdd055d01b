import type { ForkOptions } from "../../schema/api-fork.ts";
import type { RpcResult } from "../../schema/errors.ts";
import { fromWire, toWire, type Wire } from "../../schema/wire.ts";
import { asResult, parseWire, RpcError } from "../rpc/rpc-errors.ts";
import { forkDataPage, forkEntryPage, forkPlan, type ForkDataCursor, type ForkDataPage, type ForkEntryCursor, type ForkEntryPage, type ForkPlan, type ForkValue } from "./storage/fork-source.ts";
import { sealSecret, secretBoxKey } from "../../secrets/secret-box.ts";
import { openStoredSecret } from "../rpc/stored-secrets.ts";
import { toolSecretContext, type StoredToolDefinition } from "../../tools/definitions.ts";
import { beginForkImport, clearSessionData, finishForkImport, importDataPage, importEntryPage } from "./storage/fork-target.ts";
import { SqlSessionStorage } from "./storage/sql-session-storage.ts";
import { resealMcpCredentials } from "./mcp-fork-credentials.ts";
import type { SessionLifecycle, SessionView } from "./session-lifecycle.ts";
import type { SessionHost } from "./session-host.ts";

export interface ForkInit {
  tenantId: string;
  sessionId: string;
  sourceSessionId: string;
  options: Wire<ForkOptions>;
  /** As for creation: a repeat of the forking request gets the session it made. */
  creationToken?: string;
}

/** What this module reaches of the host (session-host.ts). */
type ForkHost = Pick<SessionHost, "adopt" | "ctx" | "env" | "openStorage" | "schema">;

/**
 * Forks (reference §1.11) between two objects of one tenant. The destination pulls: it asks the
 * source for a plan, then for pages of entries (and, for a whole tree, of application data), and
 * writes each page in one transaction; memory stays bounded by a page however large the source.
 * The source only reads.
 */
export class SessionFork {
  constructor(
    private readonly host: ForkHost,
    /** Answers the new session's view, as creation does. */
    private readonly lifecycle: SessionLifecycle,
  ) {}

  async forkPlan(options: Wire<ForkOptions>): Promise<Wire<RpcResult<ForkPlan>>> {
    return asResult(() => {
      const storage = this.host.openStorage();
      return forkPlan(this.host.ctx.storage, { sessionId: storage.metadata.id, highWater: storage.nextSeq - 1 }, parseWire(options));
    });
  }

  async forkEntries(plan: Wire<Pick<ForkPlan, "highWater">>, cursor: Wire<ForkEntryCursor>): Promise<Wire<RpcResult<ForkEntryPage>>> {
    return asResult(() => {
      this.host.openStorage();
      return forkEntryPage(this.host.ctx.storage, parseWire(plan), parseWire(cursor));
    });
  }

  async forkData(plan: Wire<Pick<ForkPlan, "highWater">>, cursor: Wire<ForkDataCursor>): Promise<Wire<RpcResult<ForkDataPage>>> {
    return asResult(() => {
      this.host.openStorage();
      return forkDataPage(this.host.ctx.storage, parseWire(plan), parseWire(cursor));
    });
  }

  /** Makes this object the fork of `init.sourceSessionId`; answers the new session. */
  async createFork(init: ForkInit): Promise<Wire<RpcResult<SessionView>>> {
    return asResult(async () => {
      const repeated = this.lifecycle.repeatedCreation(init);
      if (repeated) return repeated;
      try {
        await this.lifecycle.whileImporting(() => this.importFrom(init));
      } catch (error) {
        // The object holds no session (checked above): what the failed copy wrote goes, so its id
        // stays unknown and a later creation there starts empty (docs/api-sessions.md "Forks").
        if (this.host.schema.exists) clearSessionData(this.host.ctx.storage);
        throw error;
      }
      this.lifecycle.rememberCreation(init.creationToken);
      const storage = SqlSessionStorage.open(this.host.ctx.storage);
      if (!storage) throw new Error("Invariant: a finished fork holds a session");
      this.host.adopt(storage);
      return this.lifecycle.sessionView();
    });
  }

  private async importFrom(init: ForkInit): Promise<void> {
    const source = this.host.env.SESSIONS.getByName(`${init.tenantId}:${init.sourceSessionId}`);
    const plan = unwrap<ForkPlan>(await source.forkPlan(init.options));
    const high = toWire({ highWater: plan.highWater });
    // Sealing is async, and a seal that no longer opens refuses the fork (409 SecretUnreadable):
    // done first, so that such a fork writes nothing; the last (synchronous) transaction writes it.
    const withToolSecrets = await resealToolSecrets(plan.session, this.host.env.SECRETS_KEY, init.sourceSessionId, init.sessionId);
    const session = await resealMcpCredentials(withToolSecrets, this.host.env.SECRETS_KEY, init.sourceSessionId, init.sessionId);
    // The schema appears only now: a fork the source refused leaves this object without storage.
    this.host.schema.create();
    const progress = beginForkImport(this.host.ctx.storage, plan);
    let entries: ForkEntryCursor | null =
      plan.entries.kind === "tree" ? { kind: "tree", afterSeq: 0 } : plan.entries.from === null ? null : { kind: "path", from: plan.entries.from };
    while (entries) {
      const page: ForkEntryPage = unwrap<ForkEntryPage>(await source.forkEntries(high, toWire(entries)));
      importEntryPage(this.host.ctx.storage, progress, page);
      entries = page.next;
    }
    let data: ForkDataCursor | null = plan.data ? { kind: "values", after: null } : null;
    while (data) {
      const page: ForkDataPage = unwrap<ForkDataPage>(await source.forkData(high, toWire(data)));
      importDataPage(this.host.ctx.storage, progress, page);
      data = page.next;
    }
    finishForkImport(this.host.ctx.storage, progress, { ...plan, session }, { sessionId: init.sessionId, tenantId: init.tenantId, createdAt: Date.now() });
  }
}

/** The source's answer, or its tagged failure raised here (SessionNotFound, UnknownBranch, InvalidFork…). */
function unwrap<T>(reply: Wire<RpcResult<T>>): T {
  const result = fromWire(reply);
  if (!result.ok) throw new RpcError(result.error);
  return result.value;
}

/**
 * An http tool's signing secret is sealed to its session (tools/definitions.ts), so a copied
 * definition is opened with the source's context and sealed again with the fork's: the fork's
 * calls are signed with the same secret the tenant's endpoint already verifies.
 */
async function resealToolSecrets(values: ForkValue[], secretsKey: string, sourceSessionId: string, sessionId: string): Promise<ForkValue[]> {
  if (!values.some((stored) => stored.namespace === "pi.tools")) return values;
  const key = await secretBoxKey(secretsKey, "tool-secret");
  return Promise.all(
    values.map(async (stored) => {
      if (stored.namespace !== "pi.tools") return stored;
      const definition: StoredToolDefinition = JSON.parse(stored.json);
      if (definition.sealedSecret === undefined) return stored;
      const secret = await openStoredSecret(key, definition.sealedSecret, toolSecretContext(sourceSessionId, stored.key), { tool: stored.key });
      const sealedSecret = await sealSecret(key, secret, toolSecretContext(sessionId, stored.key));
      return { ...stored, json: JSON.stringify({ ...definition, sealedSecret }) };
    }),
  );
}
