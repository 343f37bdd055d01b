import { describe, expect, it } from "vitest";
import { leftoverOperationValues, types, withRig } from "./helpers.ts";

describe("a prompt → stop run", () => {
  it("settles with one completed record, the transcript placed and no operation state left", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      const outcome = await lane.prompt("hello there");
      if (!outcome.ok) throw new Error(JSON.stringify(outcome.error));
      const record = outcome.value;
      if (!("kind" in record)) throw new Error("suspended");
      const entries = lane.findEntries({ order: "oldestFirst" });
      return {
        record,
        entries: entries.map((e) => (e.type === "message" && "content" in e.message ? [e.message.role, e.message.content] : [e.type])),
        tip: lane.getTipId(),
        leftovers: leftoverOperationValues(session, record.operationId),
        // message_update carries only what changed since message_start: whether any is sent
        // depends on how far the provider ran ahead of the events read (it is a live view).
        types: types(events.filter((event) => event.type !== "message_update")),
        info: lane.inspectExecution(),
        stats: session.getStats(),
      };
    });
    expect(result.record).toMatchObject({ kind: "run", status: "completed", fromTipId: null });
    expect(result.record.tipId).toBe(result.tip);
    expect(result.entries).toEqual([
      ["user", "hello there"],
      ["assistant", [{ type: "text", text: "hello there" }]],
    ]);
    expect(result.leftovers).toEqual([]);
    expect(result.info.current).toBeNull();
    expect(result.info.lastOperationId).toBe(result.record.operationId);
    expect(result.stats.messageCount).toBe(2);
    expect(result.types).toEqual([
      "lane_created",
      "run_start",
      "message_start",
      "message_end",
      "entry_added",
      "stats",
      "turn_start",
      "message_start",
      "message_end",
      "entry_added",
      "usage",
      "stats",
      "turn_end",
      "run_end",
    ]);
  });
});
