import type { HarnessEvent, LaneConfiguration, LaneInfo, ModelIdentity, ThinkingLevel } from "../../schema/lane.ts";
import type { JsonValue } from "../../schema/json.ts";
import type { SessionSnapshot } from "../../schema/watch.ts";
import { DEFAULT_SETTINGS, EMPTY_RESOURCES, type HarnessResources, type HarnessSettings } from "../../schema/settings.ts";
import { applySettingsPatch, type HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import type { EntryProjectors } from "../execution/context.ts";
import { HarnessClosed, HarnessFault, errorMessage } from "../execution/errors.ts";
import { EventBus } from "../execution/event-bus.ts";
import { WIRE_UPDATE_INTERVAL_MS } from "../execution/frames-throttle.ts";
import { HookRegistry, hookErrorEvent } from "../execution/hooks.ts";
import type { ModelsPort } from "../execution/models.ts";
import { noTools, type ToolsPort } from "../execution/tools.ts";
import { branchTip, entryLabel, laneConfig, laneState, sessionName } from "../session/builtin-addresses.ts";
import { PayloadTooLarge, UnknownBranch, UnknownTarget } from "../session/errors.ts";
import type { SessionMutator, SessionReader } from "../session/mutation.ts";
import type { CommitResult, Write } from "../session/storage.ts";
import { validateBranchName } from "../session/branch.ts";
import type { MutationCallback, Session } from "../session/session.ts";
import { deleteValue, insertEntry, setValue } from "../session/writes.ts";
import { noWakeScheduler, type HarnessCore, type LiveUpdatePacing, type WakeScheduler } from "./core.ts";
import { DrivePassFailed } from "./driver.ts";
import { err, InvalidLane, ok, type Result } from "./errors.ts";
import { AgentLane } from "./lane.ts";
import { reconfiguration } from "./lane-config.ts";
import { CaptureStore } from "./captures.ts";
import { withStats } from "./lane-command.ts";
import { committed, type LaneProjection } from "./lane-state.ts";
import { entryOfAppend, type AppendInput } from "./queue.ts";
import { inventoryLanes, operationsInRows, restoreLane } from "./restore.ts";
import { readLaneState, type ReadLaneState } from "./lane-state-form.ts";
import { resourcesAddress, settingsAddress } from "./settings.ts";
import type { DurableLaneState } from "./types.ts";
import { openFeed, openWatch, type EventFeed, type WatchHandle } from "./watch.ts";

export interface AgentHarnessOptions {
  session: Session;
  models: ModelsPort;
  /** The tools runs may call (none unless given). */
  tools?: ToolsPort;
  /**
   * Seeds lanes that do not exist yet; never overrides an existing lane. Without a seed model,
   * every lane creation must name its model (`lane(name, { model })`), as the hosted harness does.
   */
  seed?: { model?: ModelIdentity; thinkingLevel?: ThinkingLevel; activeToolNames?: string[] };
  clock?: () => number;
  /** Spacing of live `message_update` events per lane (default: the wire throttle's 50 ms). */
  liveUpdateIntervalMs?: LiveUpdatePacing;
  wake?: WakeScheduler;
  projectors?: EntryProjectors;
}

export interface OpenOperation {
  lane: string;
  operationId: string;
  kind: "run" | "compaction" | "navigation";
  startedAt: number;
  aborting?: true;
}

/**
 * Manages the lanes of one session (reference §2.4): atomic get-or-create, global durable
 * settings (ARCHITECTURE D6), hooks, events, close and fault. It is not a lane itself.
 */
export class AgentHarness {
  readonly hooks: HookRegistry;
  readonly events = new EventBus();
  private readonly lanesByName = new Map<string, AgentLane>();
  private readonly core: HarnessCore;
  private currentSettings: HarnessSettings;
  private currentResources: HarnessResources;
  private state: { at: "open" } | { at: "closed" } | { at: "faulted"; error: HarnessFault } = { at: "open" };

  private constructor(
    private readonly options: AgentHarnessOptions,
    restored: { lanes: Map<string, LaneProjection>; settings: HarnessSettings; resources: HarnessResources },
  ) {
    this.currentSettings = restored.settings;
    this.currentResources = restored.resources;
    this.hooks = new HookRegistry((info) => void this.events.emitBatch([hookErrorEvent(info)]));
    this.core = {
      session: options.session,
      models: options.models,
      tools: options.tools ?? noTools,
      events: this.events,
      hooks: this.hooks,
      clock: options.clock ?? Date.now,
      liveUpdateIntervalMs: options.liveUpdateIntervalMs ?? (() => WIRE_UPDATE_INTERVAL_MS),
      ids: options.session.idGenerator,
      wake: options.wake ?? noWakeScheduler,
      projectors: options.projectors ?? {},
      captures: new CaptureStore(),
      operationOpen: (operationId, lane) =>
        [...this.lanesByName.values()].some(({ name, state }) => state.operation?.meta.operationId === operationId || (name !== lane && state.pending.includes(operationId))),
      sessionId: options.session.metadata.id,
      settings: () => this.currentSettings,
      resources: () => this.currentResources,
      assertOpen: () => this.assertOpen(),
      assertUnfaulted: () => {
        if (this.state.at === "faulted") throw this.state.error;
      },
      fault: (error) => this.fault(error),
    };
    for (const [name, projection] of restored.lanes) this.lanesByName.set(name, this.newLane(name, projection));
  }

  /**
   * Attaches to a session with one bounded no-commit mutation: restores every complete lane and
   * reports open operations. Starts no hook, provider, tool, timer or drive.
   */
  static async create(options: AgentHarnessOptions): Promise<{ harness: AgentHarness; open: OpenOperation[] }> {
    const restored = await options.session.mutate((m) => ({
      lanes: inventoryLanes(m),
      // Over the defaults: settings stored before a field existed get that field's default.
      settings: { ...DEFAULT_SETTINGS, ...m.getValue(settingsAddress)?.value },
      resources: m.getValue(resourcesAddress)?.value ?? EMPTY_RESOURCES,
    }));
    const harness = new AgentHarness(options, restored);
    const open = [...restored.lanes].flatMap(([lane, projection]): OpenOperation[] => {
      const operation = projection.operation;
      if (!operation) return [];
      const { meta, state } = operation;
      return [{ lane, operationId: meta.operationId, kind: meta.intent.kind, startedAt: meta.startedAt, ...(state.control.status === "cancel_requested" && { aborting: true as const }) }];
    });
    return { harness, open };
  }

  /**
   * Atomic get-or-create (the four-case table of §2.4), as one session mutation. A lane this call
   * creates is made at `createAt`, on `model` (over the seed's) and, when given, its thinking level
   * and active tools (else the seed's), all in its one creation commit; a lane that exists keeps
   * its own.
   */
  async lane(name: string, options: { createAt?: string | null; model?: ModelIdentity; thinkingLevel?: ThinkingLevel; activeToolNames?: readonly string[] } = {}): Promise<AgentLane> {
    if (name.length === 0 || name.includes("\u0000")) throw new InvalidLane(`Invalid lane name ${JSON.stringify(name)}`);
    this.assertOpen();
    const existing = this.lanesByName.get(name);
    if (existing) return existing;
    const { lane, delivered } = await this.mutate((m) => {
      const published = this.lanesByName.get(name);
      if (published) return { lane: published, delivered: Promise.resolve() };
      const tip = m.getValue(branchTip(name));
      const config = m.getValue(laneConfig<LaneConfiguration>(name));
      const durable = m.getValue(laneState<ReadLaneState>(name));
      if (tip && config && durable) {
        let projection: LaneProjection;
        try {
          projection = restoreLane(m, name, tip.value, config.value, readLaneState(durable.value), operationsInRows(m).get(name));
        } catch (error) {
          // A contradictory complete lane (missing operation or queued payload) is corruption too.
          throw this.fault(error);
        }
        const restoredLane = this.newLane(name, projection);
        this.lanesByName.set(name, restoredLane);
        return { lane: restoredLane, delivered: Promise.resolve() };
      }
      if (config || durable) throw this.fault(new Error(`Lane "${name}" is only partly stored`));
      const at = tip ? tip.value : (options.createAt ?? null);
      if (!tip && at !== null && !m.getEntries([at]).has(at)) throw new UnknownTarget(at);
      const seed = this.options.seed;
      const model = options.model ?? seed?.model;
      if (!model) throw new InvalidLane(`Lane "${name}" needs a model to be created`);
      const configuration: LaneConfiguration = {
        model,
        thinkingLevel: options.thinkingLevel ?? seed?.thinkingLevel ?? "off",
        activeToolNames: [...new Set(options.activeToolNames ?? seed?.activeToolNames ?? [])],
      };
      const idle: DurableLaneState = { lastOperationId: null, inbox: [] };
      try {
        m.commit([
          ...(tip ? [] : [setValue(branchTip(name), at)]),
          setValue(laneConfig<LaneConfiguration>(name), configuration),
          setValue(laneState<DurableLaneState>(name), idle),
        ]);
      } catch (error) {
        throw this.fault(error);
      }
      const created = this.newLane(name, { tipId: at, configuration, inbox: [], queued: new Map(), lastOperationId: null, operation: null, pending: [] });
      this.lanesByName.set(name, created);
      return { lane: created, delivered: this.events.emitBatch([{ type: "lane_created", lane: name, at }]) };
    });
    await delivered;
    return lane;
  }

  /** The already published lane, if any (no storage access). */
  getLane(name: string): AgentLane | undefined {
    return this.lanesByName.get(name);
  }

  lanes(): LaneInfo[] {
    return [...this.lanesByName.values()].map((lane) => lane.info());
  }

  /**
   * Appends one entry to a branch, deciding on the line whether a lane owns it: through the lane
   * (operation-aware, §2.3: placed when idle, queued as a `write` while busy), else raw at the
   * branch tip (§2.2). One decision in one mutation, so a lane created meanwhile never keeps a
   * stale tip. Lanes are never removed, so handing over to a lane that appeared is safe.
   */
  async appendToBranch(name: string, input: AppendInput): Promise<Result<{ entryId: string; placed: boolean }>> {
    this.assertOpen();
    validateBranchName(name);
    if (input.type === "message" && input.message.role === "assistant" && input.message.stopReason === "pending") {
      return err({ code: "InvalidMessage", lane: name, reason: "pending_assistant" });
    }
    for (;;) {
      const lane = this.lanesByName.get(name);
      if (lane) return input.type === "message" ? lane.appendMessage(input.message) : lane.appendCustomEntry(input.customType, input.data);
      const entryId = this.core.ids.next();
      const raw = await this.mutate((m) => {
        if (this.lanesByName.has(name)) return undefined;
        const tip = m.getValue(branchTip(name));
        if (!tip) throw new UnknownBranch(name);
        const writes = [insertEntry(entryOfAppend(entryId, input, tip.value)), setValue(branchTip(name), entryId)];
        const commit = this.commit(m, writes);
        // No lane, so no lane events; the session stats every lane replicates still changed.
        return { delivered: this.events.emitBatch(withStats([], { commit, ...committed(writes, commit) })) };
      });
      if (raw) {
        await raw.delivered;
        return ok({ entryId, placed: true });
      }
    }
  }

  // Session-wide observation (ARCHITECTURE D14.13).

  /** The session snapshot, captured inside the caller's no-commit mutation: lane inventory, fault, stats. */
  captureSessionSnapshot(m: SessionMutator): SessionSnapshot {
    return { lanes: this.lanes(), faulted: this.faulted, stats: m.getStats() };
  }

  /** watchSession: a gap-free session snapshot plus every later event, like a lane's watch (§5.3). */
  watchSession(): Promise<WatchHandle<SessionSnapshot>> {
    return openWatch(this.core, (m) => this.captureSessionSnapshot(m));
  }

  /** One ordered stream of every event with captures placed in it (for hosts that fan out). */
  openFeed(listener: (event: HarnessEvent) => void): EventFeed {
    return openFeed(this.core, listener);
  }

  // Durable settings and resources (D6).

  settings(): HarnessSettings {
    return this.currentSettings;
  }

  /**
   * Applies a JSON Merge Patch of the settings (schema/settings-patch.ts) on the line, so that two
   * changes to different members of one object never lose either (the merge reads what it writes).
   * `accept` sees the merged settings before they are written and may refuse them by throwing.
   */
  async updateSettings(patch: HarnessSettingsPatch, accept?: (next: HarnessSettings) => void): Promise<HarnessSettings> {
    return (await this.updateSettingsWith(patch, { ...(accept && { accept }) })).settings;
  }

  /**
   * `updateSettings`, with the host's own `writes` (read and decided on the line, a throw refusing
   * everything) in the same commit. `seq`: the commit's first seq, undefined when nothing changed.
   */
  async updateSettingsWith(
    patch: HarnessSettingsPatch,
    options: { accept?: (next: HarnessSettings) => void; writes?: (m: SessionReader) => Write[] },
  ): Promise<{ settings: HarnessSettings; seq: number | undefined }> {
    this.assertOpen();
    const { next, delivered, seq } = await this.mutate((m) => {
      const previous = this.currentSettings;
      const next = applySettingsPatch(previous, patch);
      // The host's checks of the merged settings run here, on the line, against what is written;
      // a throw refuses the change and writes nothing.
      options.accept?.(next);
      const own = options.writes?.(m) ?? [];
      const changed = (Object.keys(patch) as (keyof HarnessSettings)[]).filter(
        (key) => JSON.stringify(previous[key]) !== JSON.stringify(next[key]),
      );
      if (changed.length === 0 && own.length === 0) return { next, delivered: Promise.resolve(), seq: undefined };
      const { firstSeq } = this.commit(m, [...(changed.length > 0 ? [setValue(settingsAddress, next)] : []), ...own]);
      this.currentSettings = next;
      const events: HarnessEvent[] = changed.map((property) => ({
        type: "settings_update",
        property,
        value: json(next[property]),
        previous: json(previous[property]),
      }));
      return { next, delivered: this.events.emitBatch(events), seq: firstSeq };
    });
    await delivered;
    return { settings: next, seq };
  }

  resources(): HarnessResources {
    return this.currentResources;
  }

  async setResources(resources: HarnessResources): Promise<void> {
    this.assertOpen();
    const { delivered } = await this.mutate((m) => {
      this.commit(m, [setValue(resourcesAddress, resources)]);
      this.currentResources = resources;
      // Resources are notification-only (reference §5.2): clients re-fetch them.
      return { delivered: this.events.emitBatch([{ type: "settings_update", property: "resources", value: null, previous: null }]) };
    });
    await delivered;
  }

  /**
   * Replaces the session's settings and resources and writes what `writes` computes on the line
   * with them, in one commit: how a session moves to another agent version (its tool definitions
   * and binding among the writes), all or nothing. Events as `updateSettings` and `setResources`
   * emit them. `lanes`, computed after `writes`, gives each lane's whole configuration, written in
   * the same commit (`config_update` events as the setters emit), so that a crash never leaves the
   * session on one configuration and its lanes on another. `accept` checks the new settings on the
   * line (a throw writes nothing). Answers the commit's seq (what the tenant's index orders
   * concurrent moves by).
   */
  async replaceConfiguration(
    next: {
      settings: HarnessSettings;
      resources: HarnessResources;
      writes: (m: SessionReader) => Write[];
      lanes?: (lane: string, current: LaneConfiguration) => LaneConfiguration;
    },
    accept?: (settings: HarnessSettings) => void,
  ): Promise<{ seq: number }> {
    this.assertOpen();
    const { delivered, seq } = await this.mutate((m) => {
      accept?.(next.settings);
      const previous = this.currentSettings;
      const writes = next.writes(m);
      const laneChanges = [...this.lanesByName.values()].flatMap((lane) => {
        const current = lane.state.configuration;
        const configuration = next.lanes?.(lane.name, current) ?? current;
        const change = reconfiguration(lane.name, current, configuration);
        return change.writes.length > 0 ? [{ lane, configuration, ...change }] : [];
      });
      const { firstSeq } = this.commit(m, [
        setValue(settingsAddress, next.settings),
        setValue(resourcesAddress, next.resources),
        ...writes,
        ...laneChanges.flatMap((change) => change.writes),
      ]);
      this.currentSettings = next.settings;
      this.currentResources = next.resources;
      for (const { lane, configuration } of laneChanges) lane.publish({ ...lane.state, configuration });
      const changed = (Object.keys(next.settings) as (keyof HarnessSettings)[]).filter((key) => JSON.stringify(previous[key]) !== JSON.stringify(next.settings[key]));
      const events: HarnessEvent[] = [
        ...changed.map((property): HarnessEvent => ({ type: "settings_update", property, value: json(next.settings[property]), previous: json(previous[property]) })),
        { type: "settings_update", property: "resources", value: null, previous: null },
        ...laneChanges.flatMap((change) => change.events),
      ];
      return { delivered: this.events.emitBatch(events), seq: firstSeq };
    });
    await delivered;
    return { seq };
  }

  // Session metadata wrappers (value_update events).

  getName(): string | undefined {
    return this.options.session.getName();
  }

  /**
   * Latest-wins session name (`undefined` deletes it); the event is bound in the committing
   * mutation (§5.2). Answers the commit's seq, by which a copy kept elsewhere orders concurrent renames.
   */
  async setName(name: string | undefined): Promise<{ seq: number }> {
    this.assertOpen();
    const { delivered, seq } = await this.mutate((m) => {
      const { firstSeq } = this.commit(m, [name === undefined ? deleteValue(sessionName) : setValue(sessionName, name)]);
      return { delivered: this.events.emitBatch([{ type: "value_update", value: "session_name", name: name ?? null }]), seq: firstSeq };
    });
    await delivered;
    return { seq };
  }

  /** Latest-wins label of an existing entry (`undefined` deletes it); never moves a tip. */
  async setLabel(targetId: string, label: string | undefined): Promise<void> {
    this.assertOpen();
    const { delivered } = await this.mutate((m) => {
      if (label !== undefined && !m.getEntries([targetId]).has(targetId)) throw new UnknownTarget(targetId);
      this.commit(m, [label === undefined ? deleteValue(entryLabel(targetId)) : setValue(entryLabel(targetId), label)]);
      return { delivered: this.events.emitBatch([{ type: "value_update", value: "entry_label", targetId, label: label ?? null }]) };
    });
    await delivered;
  }

  // Lifecycle.

  get faulted(): boolean {
    return this.state.at === "faulted";
  }

  get closed(): boolean {
    return this.state.at !== "open";
  }

  /**
   * A controlled crash (reference §4.7): seals every lane, waits for detached passes to stop,
   * closes the bus and the session. Writes nothing; open operations stay open.
   */
  async close(): Promise<void> {
    if (this.state.at === "open") this.state = { at: "closed" };
    // Passes are not awaited: a provider stream or a hook may take arbitrarily long. Their gates
    // refuse every further admission and they can commit nothing more; their promises are
    // observed by the lane, so no rejection goes unhandled (§4.7).
    for (const lane of this.lanesByName.values()) lane.seal(new HarnessClosed());
    await this.events.close();
    await this.options.session.close();
  }

  /** Seals everything after a storage failure or invariant violation; returns the fault error. */
  fault(error: unknown): HarnessFault {
    if (this.state.at === "faulted") return this.state.error;
    const fault = error instanceof HarnessFault ? error : new HarnessFault(errorMessage(error), { code: "fault", cause: error });
    const wasOpen = this.state.at === "open";
    this.state = { at: "faulted", error: fault };
    for (const lane of this.lanesByName.values()) lane.seal(fault);
    if (wasOpen) void this.events.emitBatch([{ type: "fault", code: fault.code, message: fault.message }]);
    // Seal the line too: a host reopens over the same storage, and nothing of this harness may
    // commit beside the new one (lane and harness mutations already queued re-check and refuse).
    void this.options.session.close().catch(() => undefined);
    return fault;
  }

  private assertOpen(): void {
    if (this.state.at === "faulted") throw this.state.error;
    if (this.state.at === "closed") throw new HarnessClosed();
  }

  /**
   * A harness mutation: like every lane command it re-checks on the line that the harness has
   * not faulted, so nothing queued before a fault commits after it (§2.4). Mutations admitted
   * before a close still finish (D14.4).
   */
  private mutate<T>(callback: MutationCallback<T>): Promise<T> {
    return this.options.session.mutate<T>((m) => {
      this.core.assertUnfaulted();
      return callback(m);
    });
  }

  private commit(m: SessionMutator, writes: readonly Write[]): CommitResult {
    try {
      return m.commit(writes);
    } catch (error) {
      // A refused payload wrote nothing and leaves state coherent; any other failure is a fault.
      if (error instanceof PayloadTooLarge) throw error;
      throw this.fault(error);
    }
  }

  private newLane(name: string, projection: LaneProjection): AgentLane {
    return new AgentLane(this.core, {
      isClosed: () => this.state.at !== "open",
      isFaulted: () => this.state.at === "faulted",
      passFailed: (_lane, error) => {
        // A before_drive failure fails only its pass (D14.24); close ends passes by design.
        if (error instanceof DrivePassFailed || error instanceof HarnessClosed || this.state.at !== "open") return;
        this.fault(error);
      },
    }, name, projection);
  }
}

function json(value: HarnessSettings[keyof HarnessSettings]): JsonValue {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}
