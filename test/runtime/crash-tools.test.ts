import { describe, expect, it } from "vitest";
import type { OperationState, StateAt } from "../../harness/runtime/types.ts";
import { baseline, crashAt, never, settledRecord } from "./crash-rig.ts";

// The tools leaf across a real kill (reference §4.6 tools row, §4.8, §1.9 case 3), for calls that
// settle through an immediate synthetic outcome (no tool of these names is defined): a call is
// `planned`, then `outcome_ready` (payload staged in pi.pending.entry), then `completed` (placed).
// Crashes with executing tools are in crash-tool-effects.test.ts.

const steps = [
  { toolCalls: [{ name: "lookup", arguments: { q: "a" } }, { name: "search", arguments: { q: "b" } }] },
  { text: "done with tools" },
];

function batchOf(state: OperationState | null): StateAt<"tools"> {
  if (state?.at !== "tools") throw new Error(`not at tools: ${state?.at}`);
  return state;
}

describe("crash in the tools leaf", () => {
  it("with every call planned: clearance reruns, outcomes stage and place once, the run ends as uninterrupted", async () => {
    const crashed = await crashAt({
      steps,
      park: ({ harness }) => {
        let parked = false;
        // The settlement into `tools` binds entry_added for the assistant; hold its delivery.
        harness.events.on("entry_added", (event) => {
          const message = event.entry.type === "message" ? event.entry.message : undefined;
          if (message?.role !== "assistant" || !message.content.some((block) => block.type === "toolCall")) return;
          parked = true;
          return never();
        });
        return () => parked;
      },
    });
    const batch = batchOf(crashed.parked).batch;
    expect(batch.calls.map((call) => call.status)).toEqual(["planned", "planned"]);
    expect(crashed.restored).toEqual(crashed.parked);
    expect(settledRecord(crashed.driven).status).toBe("completed");
    // The reopened pass staged both calls (tool_start + tool_end each) and placed them.
    expect(crashed.events.filter((event) => event.type === "tool_start")).toHaveLength(2);
    expect(crashed.events.filter((event) => event.type === "tool_end")).toHaveLength(2);
    expect(crashed.transcript.slice(2, 4).map((entry) => entry.id)).toEqual(batch.calls.map((call) => call.resultEntryId));
    expect(crashed.stepsAfter).toBe(2);
    expect(crashed.violations).toEqual([]);
    expect(crashed.shape).toEqual((await baseline({ steps })).shape);
  });

  it("with outcomes staged but not placed: placement reads the staged payloads and never re-runs a call", async () => {
    const crashed = await crashAt({
      steps,
      park: ({ harness }) => {
        let parked = false;
        let staged = 0;
        // tool_end is bound by each call's staging commit (outcome_ready); the second precedes placement.
        harness.events.on("tool_end", () => {
          if (++staged < 2) return;
          parked = true;
          return never();
        });
        return () => parked;
      },
    });
    const batch = batchOf(crashed.parked).batch;
    expect(batch.calls.map((call) => call.status)).toEqual(["outcome_ready", "outcome_ready"]);
    expect(crashed.restored).toEqual(crashed.parked);
    expect(settledRecord(crashed.driven).status).toBe("completed");
    // Materialized without loading tool code: no new tool_start/tool_end after the kill.
    expect(crashed.events.filter((event) => event.type === "tool_start" || event.type === "tool_end")).toEqual([]);
    expect(crashed.events.filter((event) => event.type === "turn_end")).toHaveLength(2);
    expect(crashed.transcript.slice(2, 4).map((entry) => entry.id)).toEqual(batch.calls.map((call) => call.resultEntryId));
    expect(crashed.shape.slice(2, 4)).toEqual([
      { role: "toolResult", text: "Tool lookup is not available.", isError: true },
      { role: "toolResult", text: "Tool search is not available.", isError: true },
    ]);
    expect(crashed.violations).toEqual([]);
    expect(crashed.shape).toEqual((await baseline({ steps })).shape);
  });

  it("after the last placement: checkpoint{need_assistant} triggered by the last result, then the next turn", async () => {
    const crashed = await crashAt({
      steps,
      park: ({ harness }) => {
        let parked = false;
        harness.events.on("turn_end", (event) => {
          if (event.toolResults.length === 0) return;
          parked = true;
          return never();
        });
        return () => parked;
      },
    });
    const last = crashed.transcript[3]?.id;
    expect(crashed.parked).toMatchObject({ at: "checkpoint", continuation: { kind: "need_assistant", overflowRecoveryUsed: false }, triggerEntryId: last });
    expect(crashed.restored).toEqual(crashed.parked);
    expect(settledRecord(crashed.driven).status).toBe("completed");
    expect(crashed.stepsAtKill).toBe(1);
    expect(crashed.stepsAfter).toBe(2);
    expect(crashed.violations).toEqual([]);
    expect(crashed.shape).toEqual((await baseline({ steps })).shape);
  });
});
