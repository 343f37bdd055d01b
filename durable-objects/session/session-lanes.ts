import type { AbortOutcome } from "../../schema/lane-answers.ts";
import type { AbortRequestResult } from "../../harness/runtime/abort.ts";
import type { OperationAdmission, OperationRequest } from "../../harness/runtime/acceptance.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { AppendInput, CancelQueuedResult } from "../../harness/runtime/queue.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { LaneConfiguration, LaneExecutionInfo, LaneInfo, LaneSnapshot, ModelIdentity, OperationResultRecord } from "../../schema/lane.ts";
import type { DeferredHandle } from "../../schema/messages.ts";
import type { HarnessSettings, PromptTemplate, Skill } from "../../schema/settings.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import type { Wire } from "../../schema/wire.ts";
import type { PromptAnswer } from "../../schema/lane-answers.ts";
import { asResult, laneApiError, parseWire, RpcError, unwrapLane } from "../rpc/rpc-errors.ts";
import type { OperationView } from "./session-runtime.ts";
import { definedToolNames } from "../../tools/registry.ts";
import { appendedMessages, placedBy } from "./appended-messages.ts";
import { assertKnownConfiguration, laneConfigCatalog, newLaneModel, type LaneConfigCatalog } from "./lane-config-check.ts";
import { assertCanDefer } from "./deferred-check.ts";
import { assertValidSettings } from "./settings-check.ts";
import { LaneCreations } from "./lane-creations.ts";
import { pollSuspended } from "./sweep-poll.ts";
import { PAGE_BYTES_MAX } from "../../schema/api-sessions.ts";
import { PAGE_LIMIT_DEFAULT } from "../../schema/api.ts";
import { hasBranch, lanePage } from "./storage/branch-inventory.ts";
import type { Page } from "./storage/json-pages.ts";
import type { NamePageQuery } from "./session-data.ts";
import { SessionForkRpc } from "./session-fork.ts";
import type { LaneConfigPatch, NewBranchEntry, QueueInput } from "./session-host.ts";

/**
 * What a waiting convenience answers (reference §3.9 over HTTP): the settled record, a run
 * suspended on a deferred response, or the id of an operation still going when the wait ran out.
 */
export type ConvenienceOutcome<Settled = OperationResultRecord> =
  | { state: "settled"; result: Settled }
  | { state: "suspended"; operationId: string; deferred: DeferredHandle }
  | { state: "pending"; operationId: string };

/** The abort convenience: requestAbort's answer plus the record when reconciliation settled in time. */
export type { AbortOutcome };

/** Lanes, queue, operations, snapshots and settings over RPC (reference §2.3–3.9). */
export abstract class SessionLaneRpc extends SessionForkRpc {
  /** PUT …/lanes/{lane} creations in flight, one per name. */
  private readonly laneCreations = new LaneCreations<AgentLane>();

  /**
   * Get-or-create. A configuration given with it is checked first (422, nothing written) and, like
   * `createAt`, applied only by the request that creates the lane; an existing lane keeps its own.
   * Whether the lane exists is decided after the await on the tenant, and a concurrent request
   * for the same new lane waits for its one creator and answers the lane as created
   * (lane-creations.ts).
   */
  async acquireLane(name: string, createAt?: string | null, configuration?: Wire<LaneConfigPatch>): Promise<Wire<RpcResult<LaneInfo & { created: boolean }>>> {
    return asResult(async () => {
      const harness = await this.harness();
      const patch = configuration === undefined ? {} : parseWire(configuration);
      // The tenant's credentials are asked first: nothing of this session is read before the await.
      const { catalog, tenantDefault } = await this.configContext();
      assertKnownConfiguration(patch, catalog);
      const { lane, created } = await this.laneCreations.acquire(name, () => harness.getLane(name), async () => {
        // A new lane is created on its model in one commit: the one named, else the defaults'.
        const model = patch.model ?? newLaneModel(catalog, { session: harness.settings().defaultModel, tenant: tenantDefault });
        assertCanDefer(harness.settings().streamOptions.deferred, [{ lane: name, model }]);
        const create = () => harness.lane(name, { ...(createAt !== undefined && { createAt }), model });
        // A new lane takes a lane slot, and a branch slot unless its branch exists (creation-slots.ts).
        const made = await this.slots.within({ lane: true, branch: !hasBranch(this.ctx.storage, name) }, create);
        // The rest of the requested configuration follows in its own commits (config_update events
        // after lane_created), before any concurrent request for this lane is answered.
        await this.applyConfiguration(made, { ...patch, model: undefined });
        return made;
      });
      return { ...lane.info(), created };
    });
  }

  /** Lanes by name, a page at a time. */
  async lanes(query: NamePageQuery = {}): Promise<Wire<RpcResult<Page<LaneInfo>>>> {
    return asResult(async () => lanePage((await this.harness()).lanes(), query.after, { limit: query.limit ?? PAGE_LIMIT_DEFAULT, budget: PAGE_BYTES_MAX }));
  }

  async laneExecution(name: string): Promise<Wire<RpcResult<LaneExecutionInfo>>> {
    return asResult(async () => (await this.lane(name)).inspectExecution());
  }

  /** Checks the whole patch against the engine's registry before writing any part of it (422). */
  async configureLane(name: string, patch: Wire<LaneConfigPatch>): Promise<Wire<RpcResult<LaneConfiguration>>> {
    return asResult(async () => {
      const configuration = parseWire(patch);
      const { catalog } = await this.configContext();
      const lane = await this.lane(name);
      assertKnownConfiguration(configuration, catalog);
      if (configuration.model) assertCanDefer((await this.harness()).settings().streamOptions.deferred, [{ lane: name, model: configuration.model }]);
      await this.applyConfiguration(lane, configuration);
      return lane.inspectExecution().configuration;
    });
  }

  /** Admits an operation and starts its pass at once (no alarm latency on the hot path, D7). */
  async acceptOperation(name: string, request: Wire<OperationRequest>): Promise<Wire<RpcResult<OperationAdmission>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      const admission = unwrapLane(await lane.accept(await this.deferrable(lane, parseWire(request))));
      this.open().runtime.startPass(lane, admission.operationId);
      return admission;
    });
  }

  /** drive(id) made total; `waitMs` long-polls until settled or a durable wait (≤ 60 s). */
  async operation(name: string, operationId: string, waitMs = 0): Promise<Wire<RpcResult<OperationView>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      const view = await this.open().runtime.awaitOperation(lane, operationId, Math.min(waitMs, 60_000));
      if (!view) throw new RpcError({ code: "OperationMismatch", message: `Operation ${operationId} is unknown on lane ${name}` });
      return view;
    });
  }

  /**
   * resume primitive: one deferred poll permit for the current operation (joins a live pass,
   * whose options stand), then the same answer as `operation`.
   */
  async resumeOperation(name: string, operationId: string, waitMs = 0): Promise<Wire<RpcResult<OperationView>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      if (lane.state.operation?.meta.operationId === operationId) this.startPollingPass(lane, operationId);
      const view = await this.open().runtime.awaitOperation(lane, operationId, Math.min(waitMs, 60_000));
      if (!view) throw new RpcError({ code: "OperationMismatch", message: `Operation ${operationId} is unknown on lane ${name}` });
      return view;
    });
  }

  /**
   * prompt / skill / template convenience: accept (starting the pass), then wait within `waitMs`.
   * A settled run answers its record with the messages it appended, so one call gets the answer.
   */
  async acceptAndAwait(name: string, request: Wire<OperationRequest>, waitMs: number, reservationId?: string): Promise<Wire<RpcResult<ConvenienceOutcome<PromptAnswer>>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      const admission = unwrapLane(await lane.accept(await this.deferrable(lane, parseWire(request))));
      if (reservationId !== undefined) this.takeOverReservation(admission.operationId, reservationId);
      this.open().runtime.startPass(lane, admission.operationId);
      const outcome = await this.outcomeWithin(lane, admission.operationId, waitMs);
      if (outcome.state !== "settled") return outcome;
      return { state: "settled", result: { ...outcome.result, ...appendedMessages(this.openStorage(), outcome.result, placedBy(lane, outcome.result)) } };
    });
  }

  /** resume convenience: the current operation with one deferred poll permit (NothingToResume when idle). */
  async resumeCurrent(name: string, waitMs: number): Promise<Wire<RpcResult<ConvenienceOutcome>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      const current = lane.state.operation;
      if (!current) throw new RpcError(laneApiError({ code: "NothingToResume", lane: name }));
      const operationId = current.meta.operationId;
      this.startPollingPass(lane, operationId);
      return this.outcomeWithin(lane, operationId, waitMs);
    });
  }

  /** abort convenience: requestAbort(current), then the reconciliation pass, observed within `waitMs`. */
  async abortCurrent(name: string, waitMs: number): Promise<Wire<RpcResult<AbortOutcome>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      const current = lane.state.operation;
      if (!current) throw new RpcError(laneApiError({ code: "NoActiveOperation", lane: name }));
      const operationId = current.meta.operationId;
      const requested = unwrapLane(await lane.requestAbort(operationId));
      const runtime = this.open().runtime;
      runtime.startPass(lane, operationId);
      const view = await runtime.awaitOperation(lane, operationId, Math.min(waitMs, 60_000));
      return { ...requested, ...(view?.state === "settled" && { record: view.result }) };
    });
  }

  async abortOperation(name: string, operationId: string): Promise<Wire<RpcResult<AbortRequestResult>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      const result = unwrapLane(await lane.requestAbort(operationId));
      // Reconciliation needs a pass; requestAbort itself never installs one (§4.4).
      this.open().runtime.startPass(lane, operationId);
      return result;
    });
  }

  async enqueue(name: string, kind: "steer" | "followUp" | "nextRun", input: Wire<QueueInput>): Promise<Wire<RpcResult<{ entryId: string }>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      const { message, images } = parseWire(input);
      return unwrapLane(await lane[kind](message, images));
    });
  }

  async cancelQueued(name: string, entryId: string): Promise<Wire<RpcResult<{ result: CancelQueuedResult }>>> {
    return asResult(async () => ({ result: unwrapLane(await (await this.lane(name)).cancelQueued(entryId)).kind }));
  }

  async appendToLane(name: string, body: Wire<NewBranchEntry>): Promise<Wire<RpcResult<{ entryId: string; placed: boolean }>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      const entry = parseWire(body);
      return unwrapLane("message" in entry ? await lane.appendMessage(entry.message) : await lane.appendCustomEntry(entry.customType, entry.data));
    });
  }

  /**
   * An append to any branch: through its lane when one exists (placed, or queued as a write while
   * an operation is open), else raw at the tip. Decided inside the object, on the line, in one call.
   */
  async appendToBranch(name: string, body: Wire<NewBranchEntry>): Promise<Wire<RpcResult<{ entryId: string; placed: boolean }>>> {
    return asResult(async () => {
      const entry = parseWire(body);
      const input: AppendInput = "message" in entry ? { type: "message", message: entry.message } : { type: "custom", customType: entry.customType, ...(entry.data !== undefined && { data: entry.data }) };
      return unwrapLane(await (await this.harness()).appendToBranch(name, input));
    });
  }

  async laneSnapshot(name: string): Promise<Wire<RpcResult<LaneSnapshot>>> {
    return asResult(async () => {
      const watch = await (await this.lane(name)).watch();
      watch.unsubscribe();
      return watch.snapshot;
    });
  }

  async settings(): Promise<Wire<RpcResult<HarnessSettings>>> {
    return asResult(async () => (await this.harness()).settings());
  }

  /** A `defaultModel` in the patch was checked against the tenant's models by the caller (the edge). */
  async updateSettings(patch: Wire<HarnessSettingsPatch>): Promise<Wire<RpcResult<HarnessSettings>>> {
    return asResult(async () => {
      const harness = await this.harness();
      const settings = parseWire(patch);
      // Both checks run on the line against the settings as merged, so no other change slips in
      // between a check and the write (D4).
      return harness.updateSettings(settings, (next) => {
        assertValidSettings(next);
        // Turning deferred answers on for the session asks every lane's model (422, nothing written).
        const lanes = harness.lanes().flatMap(({ name }) => {
          const lane = harness.getLane(name);
          return lane ? [{ lane: name, model: lane.getModel() }] : [];
        });
        assertCanDefer(settings.streamOptions?.deferred ?? undefined, lanes);
      });
    });
  }

  /** Sets (or, with null, removes) one skill or prompt template of the session's resources (D6). */
  async setResource(kind: "skills" | "promptTemplates", name: string, body: Wire<Skill | PromptTemplate | null>): Promise<Wire<RpcResult<{ name: string }>>> {
    return asResult(async () => {
      const harness = await this.harness();
      const next = parseWire(body);
      const current = harness.resources();
      const entries: Record<string, Skill | PromptTemplate> = { ...current[kind] };
      if (next === null) delete entries[name];
      else entries[name] = next;
      await harness.setResources({ ...current, [kind]: entries });
      return { name };
    });
  }

  /** A run request whose deferred mode (its own, else the session's) the lane's model can serve (422 otherwise). */
  private async deferrable(lane: AgentLane, request: OperationRequest): Promise<OperationRequest> {
    if (request.kind === "prompt" || request.kind === "skill" || request.kind === "prompt_template") {
      const mode = request.deferred ?? (await this.harness()).settings().streamOptions.deferred;
      assertCanDefer(mode, [{ lane: lane.name, model: lane.getModel() }]);
    }
    return request;
  }

  private async applyConfiguration(lane: AgentLane, { model, thinkingLevel, activeTools }: LaneConfigPatch): Promise<void> {
    if (model) unwrapLane(await lane.setModel(model));
    if (thinkingLevel) unwrapLane(await lane.setThinkingLevel(thinkingLevel));
    if (activeTools) unwrapLane(await lane.setActiveTools(activeTools));
  }

  /** Per check: the tenant's credentials and default change without this object knowing. */
  private async configContext(): Promise<{ catalog: LaneConfigCatalog; tenantDefault: ModelIdentity | null }> {
    const tenant = await this.tenantModelSettings();
    const catalog = laneConfigCatalog({ scripted: this.env.SCRIPTED_MODELS === "on", usableProviders: tenant.usableProviders }, () => definedToolNames(this.session()));
    return { catalog, tenantDefault: tenant.defaultModel };
  }

  /**
   * The cron sweep's question about a run its DeferredIndex shard holds (ARCHITECTURE D8): a run
   * still suspended gets one poll permit (its pass starts, after a live pass without a permit
   * ends: sweep-poll.ts; the sweep does not wait for it) and is
   * "resumed", or "expired" when its handle is past its expiry (that pass fails it
   * `deferred_expired`); anything else (settled, aborted, resumed by a client, the session gone)
   * is "gone", and the shard drops the row.
   */
  async sweepDeferred(name: string, operationId: string): Promise<"resumed" | "expired" | "gone"> {
    if (!this.existingStorage()) return "gone";
    const lane = (await this.harness()).getLane(name);
    const current = lane?.state.operation;
    if (!lane || current?.meta.operationId !== operationId) return "gone";
    const wait = lane.deferredWait();
    if (!wait) return "gone";
    pollSuspended(lane, operationId).catch(() => undefined);
    return wait.handle.expiresAt !== undefined && Date.now() >= wait.handle.expiresAt ? "expired" : "resumed";
  }

  /** Starts (or joins) the pass of the current operation with one deferred poll permit (§3.11). */
  private startPollingPass(lane: AgentLane, operationId: string): void {
    lane.drive({ operationId, waitForRetry: false, pollDeferred: true }).catch(() => undefined);
  }

  /**
   * Waits through SessionRuntime.awaitOperation, which joins the one pass (waiting never starts a
   * second one, D7). A run parked on a deferred response answers its handle: a drive without a
   * poll permit touches nothing and returns the wait.
   */
  protected async outcomeWithin(lane: AgentLane, operationId: string, waitMs: number): Promise<ConvenienceOutcome> {
    const view = await this.open().runtime.awaitOperation(lane, operationId, Math.min(Math.max(0, waitMs), 60_000));
    if (view?.state === "settled") return view;
    if (view?.at === "deferred.suspended") {
      const driven = await lane.drive({ operationId, waitForRetry: false });
      const outcome = driven.ok ? driven.value : undefined;
      if (outcome?.kind === "settled") return { state: "settled", result: outcome.outcome };
      if (outcome?.reason === "deferred") return { state: "suspended", operationId, deferred: outcome.deferred };
    }
    return { state: "pending", operationId };
  }
}
