import type { JsonValue } from "../../schema/json.ts";
import type { LaneConfiguration } from "../../schema/lane.ts";
import type { Usage } from "../../schema/usage.ts";
import { laneConfig } from "../session/builtin-addresses.ts";
import { insertUsage, setValue } from "../session/writes.ts";
import type { Planner } from "./lane-command.ts";

export type ConfigProperty = "model" | "thinkingLevel" | "activeTools";

const pick = (configuration: LaneConfiguration, property: ConfigProperty): JsonValue =>
  property === "model" ? configuration.model : property === "thinkingLevel" ? configuration.thinkingLevel : configuration.activeToolNames;

/** A config setter (reference §2.3): one laneConfig write and `config_update{property, previous, value}`. */
export function planConfigure(lane: string, property: ConfigProperty, next: LaneConfiguration): Planner<LaneConfiguration> {
  return (_m, state) => ({
    writes: [setValue(laneConfig<LaneConfiguration>(lane), next)],
    next: { ...state, configuration: next },
    events: () => [{ type: "config_update", lane, property, value: pick(next, property), previous: pick(state.configuration, property) }],
    value: next,
  });
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
