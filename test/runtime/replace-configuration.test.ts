import { describe, expect, it } from "vitest";
import { settingsAddress } from "../../harness/runtime/settings.ts";
import { laneConfig } from "../../harness/session/builtin-addresses.ts";
import type { LaneConfiguration } from "../../schema/lane.ts";
import { DEFAULT_SETTINGS, EMPTY_RESOURCES } from "../../schema/settings.ts";
import { ECHO, SCRIPT } from "./helpers.ts";
import { ofType, withDriveRig } from "./drive-helpers.ts";

// harness.replaceConfiguration with lane configurations (how a session moves to an agent version):
// the session's settings and every lane's configuration are one commit, so no crash can leave the
// session on the new configuration and a lane on the old one. Events as the setters emit them.

describe("replaceConfiguration with lane configurations", () => {
  it("writes the settings and every changed lane's configuration in one commit, with config_update events per changed property", async () => {
    const result = await withDriveRig(async ({ harness, session, events }) => {
      const main = await harness.lane("main");
      const side = await harness.lane("side", { createAt: null });
      await side.setThinkingLevel("high");
      await harness.replaceConfiguration({
        settings: { ...DEFAULT_SETTINGS, systemPrompt: "moved" },
        resources: EMPTY_RESOURCES,
        writes: () => [],
        lanes: (_lane, current) => ({ ...current, model: ECHO, thinkingLevel: "off" }),
      });
      const settingsSeq = session.getValue(settingsAddress)?.seq ?? Number.NaN;
      const stored = (lane: string) => session.getValue(laneConfig<LaneConfiguration>(lane));
      return {
        // One seq per write, in write order: settings, resources, then each lane's configuration,
        // with nothing between (the old way, a setter per property, wrote the side lane twice).
        seqs: [stored("main")?.seq, stored("side")?.seq].map((seq) => (seq ?? Number.NaN) - settingsSeq),
        stored: [stored("main")?.value, stored("side")?.value],
        projected: [main.getModel(), side.getModel(), side.getThinkingLevel()],
        updates: ofType(events, "config_update").map(({ lane, property, value, previous }) => ({ lane, property, value, previous })),
      };
    });
    expect(result.seqs).toEqual([2, 3]);
    expect(result.stored).toEqual([
      { model: ECHO, thinkingLevel: "off", activeToolNames: expect.any(Array) },
      { model: ECHO, thinkingLevel: "off", activeToolNames: expect.any(Array) },
    ]);
    expect(result.projected).toEqual([ECHO, ECHO, "off"]);
    // The side lane's earlier setter, then the move: only what changed is announced.
    expect(result.updates).toEqual([
      { lane: "side", property: "thinkingLevel", value: "high", previous: "off" },
      { lane: "main", property: "model", value: ECHO, previous: SCRIPT },
      { lane: "side", property: "model", value: ECHO, previous: SCRIPT },
      { lane: "side", property: "thinkingLevel", value: "off", previous: "high" },
    ]);
  });

  it("leaves a lane whose configuration does not change unwritten", async () => {
    const result = await withDriveRig(async ({ harness, session }) => {
      await harness.lane("main");
      const before = session.getValue(laneConfig<LaneConfiguration>("main"))?.seq;
      await harness.replaceConfiguration({ settings: DEFAULT_SETTINGS, resources: EMPTY_RESOURCES, writes: () => [], lanes: (_lane, current) => current });
      return { before, after: session.getValue(laneConfig<LaneConfiguration>("main"))?.seq };
    });
    expect(result.after).toBe(result.before);
  });
});
