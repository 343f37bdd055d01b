import { describe, expect, it } from "vitest";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import { settledRecord, unwrap } from "./drive-helpers.ts";
import { SCRIPT, withRig, type Rig } from "./helpers.ts";
import { checkInvariants } from "./invariants.ts";
import { shapeOf, transcriptOf } from "./crash-rig.ts";
import { defineTool, executionsOf, testTools, text, type TestToolSpec } from "./tool-helpers.ts";

// A client call ahead of other calls in a sequential batch (ARCHITECTURE D11, reference §4.8):
// sequential mode holds every later call back while the client call waits, so the run must rest
// in the tools leaf for the client (never "continue without progress", which faults the harness),
// and once the result is posted the batch goes on one call at a time in source order. Sequential
// either by the run's setting or because a called tool declares it.

const steps = [
  { toolCalls: [{ name: "before", arguments: {} }, { name: "ask_user", arguments: {} }, { name: "after", arguments: {} }] },
  { text: "all three answered" },
];

function clientCallId(lane: AgentLane): string {
  for (const entry of transcriptOf(lane)) {
    if (entry.type !== "message" || entry.message.role !== "assistant") continue;
    const call = entry.message.content.find((block) => block.type === "toolCall" && block.name === "ask_user");
    if (call?.type === "toolCall") return call.id;
  }
  throw new Error("no client call");
}

async function sequentialBatch(rig: Rig, settings: HarnessSettingsPatch): Promise<void> {
  await defineTool(rig.session, "ask_user", { kind: "client", description: "Asks the user", parameters: { type: "object" }, replay: "safe" });
  await rig.harness.updateSettings(settings);
  const lane = await rig.harness.lane("main");
  await lane.setActiveTools(["before", "ask_user", "after"]);
  const operationId = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
  const id = operationId.operationId;

  // The call before the client call ran; the one after it is held back; the run waits for the client.
  expect(unwrap(await lane.drive({ operationId: id }))).toMatchObject({ kind: "waiting", reason: "client_tool" });
  expect(rig.harness.faulted).toBe(false);
  const batch = lane.state.operation?.state.at === "tools" ? lane.state.operation.state.batch : undefined;
  expect(batch?.calls.map((call) => call.status)).toEqual(["completed", "effect_pending", "planned"]);
  expect(executionsOf(rig.session).map((row) => row.tool)).toEqual(["before"]);
  // A second pass (an alarm, a wake) finds the same wait and parks again.
  expect(unwrap(await lane.drive({ operationId: id }))).toMatchObject({ kind: "waiting", reason: "client_tool" });
  expect(rig.harness.faulted).toBe(false);

  unwrap(await lane.submitToolResult(id, clientCallId(lane), { content: [{ type: "text", text: "yes" }] }));
  expect(settledRecord(await lane.drive({ operationId: id })).status).toBe("completed");
  expect(executionsOf(rig.session).map((row) => row.tool)).toEqual(["before", "after"]);
  expect(shapeOf(transcriptOf(lane)).slice(2)).toEqual([
    { role: "toolResult", text: "before answer", isError: false },
    { role: "toolResult", text: "yes", isError: false },
    { role: "toolResult", text: "after answer", isError: false },
    { role: "assistant", stopReason: "stop", text: "all three answered" },
  ]);
  expect(checkInvariants(rig.session)).toEqual([]);
}

const quick = (answer: string, spec: Partial<TestToolSpec> = {}): TestToolSpec => ({ run: async () => text(answer), ...spec });

describe("a client call ahead of another call in a sequential batch", () => {
  it("sequential by the run's setting: the run waits for the client, then runs the rest in source order", async () => {
    await withRig((rig) => sequentialBatch(rig, { toolExecution: "sequential" }), {
      model: SCRIPT,
      steps,
      tools: testTools({ before: quick("before answer"), after: quick("after answer") }),
    });
  });

  it("sequential because a called tool declares it: the same wait, then the same order", async () => {
    await withRig((rig) => sequentialBatch(rig, {}), {
      model: SCRIPT,
      steps,
      tools: testTools({ before: quick("before answer"), after: quick("after answer", { executionMode: "sequential" }) }),
    });
  });
});
