import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { AppendInput, CancelQueuedResult } from "../../harness/runtime/queue.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { LaneConfiguration, LaneExecutionInfo, LaneInfo, LaneSnapshot, ModelIdentity } from "../../schema/lane.ts";
import type { Wire } from "../../schema/wire.ts";
import type { PendingRun } from "../../schema/lane-answers.ts";
import { once, type ReceiptScope } from "../rpc/idempotency.ts";
import { asResult, parseWire, unwrapLane } from "../rpc/rpc-errors.ts";
import { definedToolNames } from "../../tools/registry.ts";
import { assertKnownConfiguration, laneConfigCatalog, newLaneModel, type LaneConfigCatalog } from "./lane-config-check.ts";
import { assertCanDefer } from "./deferred-check.ts";
import { LaneCreations } from "./lane-creations.ts";
import { notBound } from "./agent-configuration.ts";
import { sessionAgent } from "../../harness/session/builtin-addresses.ts";
import { PAGE_BYTES_MAX } from "../../schema/api-sessions.ts";
import { PAGE_LIMIT_DEFAULT } from "../../schema/api.ts";
import { hasBranch, lanePage } from "./storage/branch-inventory.ts";
import type { Page } from "./storage/json-pages.ts";
import type { NamePageQuery } from "./session-branches.ts";
import type { LaneConfigPatch, NewBranchEntry, QueueInput, SessionHost } from "./session-host.ts";
import type { CreationSlots } from "./creation-slots.ts";

/** What this module reaches of the host (session-host.ts). */
type LanesHost = Pick<SessionHost, "ctx" | "env" | "harness" | "lane" | "models" | "session">;

/** Lanes over RPC (reference §2.3–3.8): creation and configuration, the inbox, appends and snapshots. */
export class SessionLanes {
  /** PUT …/lanes/{lane} creations in flight, one per name. */
  private readonly laneCreations = new LaneCreations<AgentLane>();

  constructor(
    private readonly host: LanesHost,
    /** The branch and lane caps, checked before the engine creates either. */
    private readonly slots: CreationSlots,
  ) {}

  /**
   * Get-or-create. A configuration given with it is checked first (422, nothing written) and, like
   * `createAt`, applied only by the request that creates the lane; an existing lane keeps its own.
   * Whether the lane exists is decided after the await on the tenant, and a concurrent request
   * for the same new lane waits for its one creator and answers the lane as created
   * (lane-creations.ts).
   */
  async acquireLane(name: string, createAt?: string | null, configuration?: Wire<LaneConfigPatch>, agent?: boolean): Promise<Wire<RpcResult<LaneInfo & { created: boolean }>>> {
    return asResult(async () => {
      const harness = await this.host.harness();
      // The tenant's credentials are asked first: nothing of this session is read before the await.
      const { catalog, tenantDefault } = await this.configContext();
      // What the request names is refused when unknown, whether the lane exists or not.
      const requested = configuration === undefined ? {} : parseWire(configuration);
      assertKnownConfiguration(requested, catalog);
      const { lane, created } = await this.laneCreations.acquire(name, () => harness.getLane(name), async () => {
        // The agent version's lane configuration is for lanes made now (an existing lane keeps its
        // own): checked here, so a tool the session no longer has refuses only a creation.
        const patch = { ...this.agentLaneConfiguration(agent), ...requested };
        assertKnownConfiguration(patch, catalog);
        // A new lane is created on its model in one commit: the one named, else the defaults'.
        const model = patch.model ?? newLaneModel(catalog, { session: harness.settings().defaultModel, tenant: tenantDefault });
        assertCanDefer(harness.settings().streamOptions.deferred, [{ lane: name, model }]);
        // The whole requested configuration goes into the creation commit: no operation is accepted
        // on a lane half configured, and a crash leaves the lane whole or not at all (a retried PUT
        // finds an existing lane and applies nothing).
        const create = () =>
          harness.lane(name, {
            ...(createAt !== undefined && { createAt }),
            model,
            ...(patch.thinkingLevel !== undefined && { thinkingLevel: patch.thinkingLevel }),
            ...(patch.activeTools !== undefined && { activeToolNames: patch.activeTools }),
          });
        // A new lane takes a lane slot, and a branch slot unless its branch exists (creation-slots.ts).
        return this.slots.within({ lane: true, branch: !hasBranch(this.host.ctx.storage, name) }, create);
      });
      return { ...lane.info(), created };
    });
  }

  /** Lanes by name, a page at a time. */
  async lanes(query: NamePageQuery = {}): Promise<Wire<RpcResult<Page<LaneInfo>>>> {
    return asResult(async () => lanePage((await this.host.harness()).lanes(), query.after, { limit: query.limit ?? PAGE_LIMIT_DEFAULT, budget: PAGE_BYTES_MAX }));
  }

  /** `GET …/lanes/{lane}/pending`: the lane's pending runs in line (spec "Prompt while busy"). */
  async pendingRuns(name: string): Promise<Wire<RpcResult<PendingRun[]>>> {
    return asResult(async () => (await this.host.lane(name)).pendingRuns().map((run) => ({ ...run, kind: "run" as const, state: "pending" as const })));
  }

  async laneExecution(name: string): Promise<Wire<RpcResult<LaneExecutionInfo>>> {
    return asResult(async () => (await this.host.lane(name)).inspectExecution());
  }

  /** Checks the whole patch against the engine's registry before writing any part of it (422). */
  async configureLane(name: string, patch: Wire<LaneConfigPatch>): Promise<Wire<RpcResult<LaneConfiguration>>> {
    return asResult(async () => {
      const configuration = parseWire(patch);
      const { catalog } = await this.configContext();
      const lane = await this.host.lane(name);
      const harness = await this.host.harness();
      assertKnownConfiguration(configuration, catalog);
      // Checked on the line, against the session's settings then (a PATCH turning deferred runs on
      // meanwhile is either before it, and refuses this model, or after it, and sees this model),
      // and against the pending runs waiting on the lane, which start on the model of their turn.
      const deferrable = configuration.model
        ? (next: LaneConfiguration) => {
            for (const mode of [harness.settings().streamOptions.deferred, ...lane.pendingDeferredModes()]) assertCanDefer(mode, [{ lane: name, model: next.model }]);
          }
        : undefined;
      await this.applyConfiguration(lane, configuration, deferrable);
      return lane.inspectExecution().configuration;
    });
  }

  /** Queued once per claimed key (`receipt`, rpc/idempotency.ts): a repeat after a crash answers the first entry. */
  async enqueue(name: string, kind: "steer" | "followUp" | "nextRun", input: Wire<QueueInput>, receipt?: ReceiptScope): Promise<Wire<RpcResult<{ entryId: string }>>> {
    return asResult(async () => {
      const lane = await this.host.lane(name);
      const { message, images } = parseWire(input);
      return once(this.host.ctx.storage.sql, receipt, async () => unwrapLane(await lane[kind](message, images)));
    });
  }

  async cancelQueued(name: string, entryId: string): Promise<Wire<RpcResult<{ result: CancelQueuedResult }>>> {
    return asResult(async () => ({ result: unwrapLane(await (await this.host.lane(name)).cancelQueued(entryId)).kind }));
  }

  async appendToLane(name: string, body: Wire<NewBranchEntry>, receipt?: ReceiptScope): Promise<Wire<RpcResult<{ entryId: string; placed: boolean }>>> {
    return asResult(async () => {
      const lane = await this.host.lane(name);
      const entry = parseWire(body);
      return once(this.host.ctx.storage.sql, receipt, async () => unwrapLane("message" in entry ? await lane.appendMessage(entry.message) : await lane.appendCustomEntry(entry.customType, entry.data)));
    });
  }

  /**
   * An append to any branch: through its lane when one exists (placed, or queued as a write while
   * an operation is open), else raw at the tip. Decided inside the object, on the line, in one call.
   */
  async appendToBranch(name: string, body: Wire<NewBranchEntry>, receipt?: ReceiptScope): Promise<Wire<RpcResult<{ entryId: string; placed: boolean }>>> {
    return asResult(async () => {
      const entry = parseWire(body);
      const input: AppendInput = "message" in entry ? { type: "message", message: entry.message } : { type: "custom", customType: entry.customType, ...(entry.data !== undefined && { data: entry.data }) };
      const harness = await this.host.harness();
      return once(this.host.ctx.storage.sql, receipt, async () => unwrapLane(await harness.appendToBranch(name, input)));
    });
  }

  async laneSnapshot(name: string): Promise<Wire<RpcResult<LaneSnapshot>>> {
    return asResult(async () => {
      const watch = await (await this.host.lane(name)).watch();
      watch.unsubscribe();
      return watch.snapshot;
    });
  }

  /**
   * What a new lane takes from the agent version the session is bound to (unless `agent` is
   * false): its model, thinking level and active tools. `agent: true` without a binding is 409.
   */
  private agentLaneConfiguration(agent: boolean | undefined): LaneConfigPatch {
    if (agent === false) return {};
    const binding = this.host.session().getValue(sessionAgent)?.value;
    if (!binding) {
      if (agent === true) throw notBound();
      return {};
    }
    const { model, thinkingLevel, activeTools } = binding.lane;
    return { ...(model && { model }), ...(thinkingLevel && { thinkingLevel }), ...(activeTools && { activeTools }) };
  }

  /** The patch in one commit: no operation is accepted between two of its properties. */
  private async applyConfiguration(lane: AgentLane, { model, thinkingLevel, activeTools }: LaneConfigPatch, accept?: (next: LaneConfiguration) => void): Promise<void> {
    unwrapLane(await lane.reconfigure({ ...(model && { model }), ...(thinkingLevel && { thinkingLevel }), ...(activeTools && { activeToolNames: activeTools }) }, accept));
  }

  /** Per check: the tenant's credentials and default change without this object knowing. */
  private async configContext(): Promise<{ catalog: LaneConfigCatalog; tenantDefault: ModelIdentity | null }> {
    const tenant = await this.host.models.settings();
    const catalog = laneConfigCatalog({ scripted: this.host.env.SCRIPTED_MODELS === "on", usableProviders: tenant.usableProviders }, () => definedToolNames(this.host.session()));
    return { catalog, tenantDefault: tenant.defaultModel };
  }
}
