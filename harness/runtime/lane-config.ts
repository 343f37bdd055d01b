import type { JsonValue } from "../../schema/json.ts";
import type { HarnessEvent, LaneConfiguration } from "../../schema/lane.ts";
import type { Usage } from "../../schema/usage.ts";
import { laneConfig } from "../session/builtin-addresses.ts";
import { insertUsage, setValue } from "../session/writes.ts";
import type { Write } from "../session/storage.ts";
import type { Planner } from "./lane-command.ts";

export type ConfigProperty = "model" | "thinkingLevel" | "activeTools";

const pick = (configuration: LaneConfiguration, property: ConfigProperty): JsonValue =>
  property === "model" ? configuration.model : property === "thinkingLevel" ? configuration.thinkingLevel : configuration.activeToolNames;

/** One configuration property and its new value. */
export type ConfigChange =
  | { property: "model"; value: LaneConfiguration["model"] }
  | { property: "thinkingLevel"; value: LaneConfiguration["thinkingLevel"] }
  | { property: "activeTools"; value: string[] };

function apply(configuration: LaneConfiguration, change: ConfigChange): LaneConfiguration {
  switch (change.property) {
    case "model":
      return { ...configuration, model: change.value };
    case "thinkingLevel":
      return { ...configuration, thinkingLevel: change.value };
    case "activeTools":
      return { ...configuration, activeToolNames: [...change.value] };
  }
}

/**
 * A config setter (reference §2.3): one laneConfig write and `config_update{property, previous,
 * value}`. The next configuration is computed on the line from the state the planner is given,
 * never from a projection read before the command was queued (WP06 lost-update prevention).
 */
export function planConfigure(lane: string, change: ConfigChange): Planner<LaneConfiguration> {
  return (_m, state) => {
    const next = apply(state.configuration, change);
    return {
      writes: [setValue(laneConfig<LaneConfiguration>(lane), next)],
      next: { ...state, configuration: next },
      events: () => [{ type: "config_update", lane, property: change.property, value: pick(next, change.property), previous: pick(state.configuration, change.property) }],
      value: next,
    };
  };
}

const CONFIG_PROPERTIES: readonly ConfigProperty[] = ["model", "thinkingLevel", "activeTools"];

/**
 * Several properties set at once (a PATCH of a lane's configuration): one laneConfig write and a
 * `config_update` per property that changed, so no operation is accepted between two of them and a
 * crash leaves all or none.
 */
export function planReconfigure(lane: string, patch: Partial<LaneConfiguration>, accept?: (next: LaneConfiguration) => void): Planner<LaneConfiguration> {
  return (_m, state) => {
    const next: LaneConfiguration = {
      model: patch.model ?? state.configuration.model,
      thinkingLevel: patch.thinkingLevel ?? state.configuration.thinkingLevel,
      activeToolNames: patch.activeToolNames === undefined ? state.configuration.activeToolNames : [...new Set(patch.activeToolNames)],
    };
    // The host's checks of the whole next configuration, on the line: a throw writes nothing.
    accept?.(next);
    const { writes, events } = reconfiguration(lane, state.configuration, next);
    return { writes, next: { ...state, configuration: next }, events: () => events, value: next };
  };
}

/**
 * A lane taking a whole configuration inside a commit its caller makes (a session's move to an
 * agent version, harness.ts replaceConfiguration): its laneConfig write when anything differs, and
 * a `config_update` per property that changed, as the setters above emit them. Computed on the
 * line from the lane's projection, like a setter's.
 */
export function reconfiguration(lane: string, current: LaneConfiguration, next: LaneConfiguration): { writes: Write[]; events: HarnessEvent[] } {
  const changed = CONFIG_PROPERTIES.filter((property) => JSON.stringify(pick(current, property)) !== JSON.stringify(pick(next, property)));
  if (changed.length === 0) return { writes: [], events: [] };
  return {
    writes: [setValue(laneConfig<LaneConfiguration>(lane), next)],
    events: changed.map((property) => ({ type: "config_update", lane, property, value: pick(next, property), previous: pick(current, property) })),
  };
}

/** An adjustment row in the usage ledger and its `usage` event with the new totals (§1.7). */
export function planRecordUsage(
  lane: string,
  usageId: string,
  usage: Usage,
  options: { entryId?: string; details?: JsonValue },
): Planner<{ usageId: string }> {
  return () => ({
    writes: [insertUsage({ id: usageId, usage, adjustment: true, ...options })],
    events: (done) => (done?.usage ?? []).map((row) => ({ type: "usage", lane, row, totals: done?.commit.stats.usage ?? usage })),
    value: { usageId },
  });
}
