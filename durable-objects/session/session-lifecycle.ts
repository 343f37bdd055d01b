import { resourcesAddress, settingsAddress } from "../../harness/runtime/settings.ts";
import { sessionMetadata, sessionName } from "../../harness/session/builtin-addresses.ts";
import { setValue } from "../../harness/session/writes.ts";
import { DEFAULT_SETTINGS } from "../../schema/settings.ts";
import { applySettingsPatch } from "../../schema/settings-patch.ts";
import type { Write } from "../../harness/session/storage.ts";
import { PAGE_BYTES_MAX } from "../../schema/api-sessions.ts";
import { PAGE_LIMIT_DEFAULT } from "../../schema/api.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult, parseWire, RpcError } from "../rpc/rpc-errors.ts";
import type { CreatedSession, Session as SessionWire } from "../../schema/session.ts";
import type { ToolDefinitionInput } from "../../schema/tools.ts";
import { toolDefinition } from "../../tools/definitions.ts";
import { newToolSecret, storedToolDefinition } from "./tool-definition-input.ts";
import type { AgentForSession } from "../../tools/tenant-copies.ts";
import { agentCreation, type AgentCreation } from "./agent-configuration.ts";
import { assertCanDefer } from "./deferred-check.ts";
import { assertKnownConfiguration, laneConfigCatalog, newLaneModel } from "./lane-config-check.ts";
import { branchPage, lanePage } from "./storage/branch-inventory.ts";
import { clearSessionData } from "./storage/fork-target.ts";
import { readImportState } from "./storage/import-staging.ts";
import { SqlSessionStorage } from "./storage/sql-session-storage.ts";
import type { SessionHost, SessionInfo, SessionInit } from "./session-host.ts";

/** The public Session (spec/API.md): info plus settings, and the first page of its branches and lanes. */
export type SessionView = SessionWire;

/** What the session view embeds of each listing: the first page a listing answers by default. */
const EMBEDDED_PAGE = { limit: PAGE_LIMIT_DEFAULT, budget: PAGE_BYTES_MAX };

/** The object's KV key of the token of the request that created the session (see `SessionInit`). */
const CREATION_TOKEN_KEY = "creationToken";

/** How long deletion waits for the harness to close before it closes storage regardless. */
const CLOSE_BOUND_MS = 5_000;

/** What this module reaches of the host (session-host.ts). */
type LifecycleHost = Pick<SessionHost, "adopt" | "ctx" | "describe" | "dueWork" | "env" | "existingStorage" | "forwardPending" | "harness" | "models" | "release" | "schema" | "summary" | "toolDefinitionContext">;

/** The session's life: creation (in one atomic step), its info and public view, and deletion. */
export class SessionLifecycle {
  /** A fork's import runs in this object (session-fork.ts). */
  private importing = false;

  constructor(private readonly host: LifecycleHost) {}

  /**
   * Creates the session in one atomic step: the schema, the session row, the name, the metadata
   * map, the settings, the resources and the tools are written in one synchronous turn (one
   * storage batch), so a failure leaves no half-made session. A repeat of the creating request (same `creationToken`) gets the session it
   * created; any other creation of an existing session is `SessionExists`.
   */
  async create(init: SessionInit): Promise<Wire<RpcResult<CreatedSession>>> {
    return asResult(async () => {
      // Checked and sealed before the existence check: from that read to the writes that depend
      // on it, nothing awaits, so no other request can slip in between.
      const tools = init.tools === undefined ? undefined : await this.initialTools(init.sessionId, parseWire(init.tools));
      const bound = init.agent === undefined ? undefined : await this.agentCreation(init, parseWire(init.agent));
      const repeated = this.repeatedCreation(init);
      if (repeated) return repeated;
      // No session, fork or import here (repeatedCreation): rows an earlier build's failed fork
      // left behind are not this session's (and their seqs would collide with its own).
      if (this.host.schema.exists) clearSessionData(this.host.ctx.storage);
      this.host.schema.create();
      const storage = SqlSessionStorage.create(this.host.ctx.storage, { id: init.sessionId, tenantId: init.tenantId, createdAt: Date.now() });
      const writes = [
        ...(init.name !== undefined ? [setValue(sessionName, init.name)] : []),
        ...(init.metadata !== undefined && Object.keys(init.metadata).length > 0 ? [setValue(sessionMetadata, init.metadata)] : []),
        // Bound to an agent version: its settings and resources, with the request's over them.
        ...(bound?.writes ?? []),
        ...(!bound && init.settings !== undefined ? [setValue(settingsAddress, applySettingsPatch(DEFAULT_SETTINGS, parseWire(init.settings)))] : []),
        ...(!bound && init.resources !== undefined ? [setValue(resourcesAddress, parseWire(init.resources))] : []),
        ...(tools?.writes ?? []),
      ];
      if (writes.length > 0) storage.commit(writes);
      this.rememberCreation(init.creationToken);
      this.host.adopt(storage);
      const view = await this.sessionView();
      const secrets = { ...bound?.secrets, ...tools?.secrets };
      return Object.keys(secrets).length > 0 ? { ...view, toolSecrets: secrets } : view;
    });
  }

  /**
   * What a session created from an agent version writes (agent-configuration.ts), checked and
   * sealed before anything is read: lane `main` on the version's model, else on the model a new
   * lane gets (the session's default, the tenant's, the first usable), known to the tenant now,
   * with active tools the session will define.
   */
  private async agentCreation(init: SessionInit, bundle: AgentForSession): Promise<AgentCreation> {
    const ownTools = new Set(Object.keys(init.tools === undefined ? {} : parseWire(init.tools)));
    const request = {
      ...(init.settings !== undefined && { settings: parseWire(init.settings) }),
      ...(init.resources !== undefined && { resources: parseWire(init.resources) }),
      ownTools,
    };
    return agentCreation(bundle, request, this.host.toolDefinitionContext(init.sessionId), async (settings, binding, knownTools) => {
      const tenant = await this.host.models.settings(init.tenantId);
      const catalog = laneConfigCatalog({ scripted: this.host.env.SCRIPTED_MODELS === "on", usableProviders: tenant.usableProviders }, () => knownTools);
      const model = binding.lane.model ?? newLaneModel(catalog, { session: settings.defaultModel, tenant: tenant.defaultModel });
      assertKnownConfiguration({ model, ...(binding.lane.activeTools && { activeTools: binding.lane.activeTools }) }, catalog);
      assertCanDefer(settings.streamOptions.deferred, [{ lane: "main", model }]);
      return model;
    });
  }

  /** What `PUT …/tools/{name}` checks and seals, for every tool of a creating request; fresh secrets for the http ones. */
  async initialTools(sessionId: string, inputs: Record<string, ToolDefinitionInput>): Promise<{ writes: Write[]; secrets: Record<string, string> }> {
    const context = this.host.toolDefinitionContext(sessionId);
    const writes: Write[] = [];
    const secrets: Record<string, string> = {};
    for (const [name, input] of Object.entries(inputs)) {
      const secret = input.kind === "http" ? newToolSecret() : undefined;
      writes.push(setValue(toolDefinition(name), await storedToolDefinition(name, input, context, secret, `tools.${name}`)));
      if (secret !== undefined) secrets[name] = secret;
    }
    return { writes, secrets };
  }

  /**
   * Creation and fork both start here, before anything is written: a repeat of the creating
   * request (same `creationToken`) gets the session it created; any other creation of an existing
   * session is `SessionExists`, and so is one while a fork imports into this object (a fork holds
   * no metadata until its last step, so the existence check cannot see it: its id is taken all the
   * same), and so is one while an import is staged here (session-import.ts). Undefined: the id is free.
   */
  repeatedCreation(init: { sessionId: string; creationToken?: string }): Promise<SessionView> | undefined {
    if (this.host.existingStorage()) {
      const token = this.host.ctx.storage.kv.get<string>(CREATION_TOKEN_KEY);
      if (init.creationToken === undefined || token !== init.creationToken) {
        throw new RpcError({ code: "SessionExists", message: `Session ${init.sessionId} already exists` });
      }
      return this.sessionView();
    }
    if (this.importing || (this.host.schema.exists && readImportState(this.host.ctx.storage) !== undefined)) throw new RpcError({ code: "SessionExists", message: `Session ${init.sessionId} is being created` });
    return undefined;
  }

  /** Runs a fork's import: creations of this id are refused until it ends. */
  async whileImporting(work: () => Promise<void>): Promise<void> {
    this.importing = true;
    try {
      await work();
    } finally {
      this.importing = false;
    }
  }

  /** Remembers which request created the session, so that its repeat finds it. */
  rememberCreation(creationToken: string | undefined): void {
    if (creationToken !== undefined) this.host.ctx.storage.kv.put(CREATION_TOKEN_KEY, creationToken);
  }

  async info(): Promise<Wire<RpcResult<SessionInfo>>> {
    return asResult(() => this.host.describe());
  }

  /** When the session was created: which session holds this id now (a browser token names it). */
  async createdAt(): Promise<Wire<RpcResult<number>>> {
    return asResult(() => this.host.summary().createdAt);
  }

  /** The public Session view; opens the harness (lanes and settings live there). */
  async view(): Promise<Wire<RpcResult<SessionView>>> {
    return asResult(() => this.sessionView());
  }

  /** Bounded whatever the session holds: the first page of branches and of lanes, with the cursors that continue them. */
  async sessionView(): Promise<SessionView> {
    const harness = await this.host.harness();
    const branches = branchPage(this.host.ctx.storage, undefined, EMBEDDED_PAGE);
    const lanes = lanePage(harness.lanes(), undefined, EMBEDDED_PAGE);
    return {
      ...this.host.summary(),
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
   * sealed, the line drained; a live pass can commit nothing more), watchers are disconnected, what
   * the tenant was not told yet is forwarded, then the alarm and all storage are deleted. The schema is not re-created: the object holds nothing
   * again, and later calls answer SessionNotFound like any object that never held a session.
   * `createdAt`: the deleted session's, by which the tenant's index tells it from a session
   * created again under its id in the meantime (tenant-listings.ts). With `expectedCreatedAt` (a
   * queued deletion's), a session of another creation time is left as it is: `deleted: false`
   * with that session's `createdAt`.
   */
  async deleteSession(expectedCreatedAt?: number, onlyIfIdle = false): Promise<Wire<RpcResult<{ deleted: boolean; createdAt?: number; busy?: true }>>> {
    return asResult(() =>
      this.host.ctx.blockConcurrencyWhile(async () => {
        // A queued deletion names the session it queued: one created again under the id since
        // (the queued one deleted meanwhile) is another's, and stays.
        const held = expectedCreatedAt === undefined ? undefined : this.host.existingStorage()?.metadata.createdAt;
        if (held !== undefined && held !== expectedCreatedAt) return { deleted: false, createdAt: held };
        // Retention deletes idle sessions only: one with an operation open (an end user who came
        // back after the period, still being answered) is not idle, whatever the tenant's index
        // recorded, and stays. Decided here, where the operation is known for certain.
        if (onlyIfIdle && this.host.existingStorage() !== undefined && this.host.dueWork.hasOpenOperations()) return { deleted: false, busy: true as const };
        const opened = this.host.release();
        const createdAt = (opened?.storage ?? this.host.existingStorage())?.metadata.createdAt;
        if (createdAt === undefined) return { deleted: false };
        if (opened) {
          await within(CLOSE_BOUND_MS, opened.runtime.harness().then((harness) => harness.close(), () => opened.session.close()));
          // Whatever is still running can commit nothing from here on.
          opened.storage.close();
        }
        for (const socket of this.host.ctx.getWebSockets()) {
          try {
            socket.close(1000, "Session deleted");
          } catch {
            // Already closing: nothing to tell it.
          }
        }
        // What the tenant was not told yet (a forward waiting out its coalescing), within a bound:
        // an unreachable tenant must not hold the deletion up.
        await within(CLOSE_BOUND_MS, this.host.forwardPending());
        await this.host.dueWork.disarm();
        await this.host.ctx.storage.deleteAll();
        this.host.schema.forget();
        return { deleted: true, createdAt };
      }),
    );
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
