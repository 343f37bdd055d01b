import { describe, expect, it } from "vitest";
import { settledRecord, unwrap } from "./drive-helpers.ts";
import { SCRIPT, withRig } from "./helpers.ts";
import { checkInvariants } from "./invariants.ts";
import { shapeOf, transcriptOf } from "./crash-rig.ts";
import { defineTool, testTools, text } from "./tool-helpers.ts";

// A client call beside executing calls in one parallel batch (ARCHITECTURE D11): results are
// placed in source order, so an executed call after a waiting client call is settled but cannot
// be placed yet. The run must park for the client then — not spin — and place both, in order,
// once the client answers.

describe("a client call ahead of an executed call in a parallel batch", () => {
  it("the run parks with the later call settled-but-unplaced; the posted answer places both in source order", async () => {
    await withRig(
      async (rig) => {
        await defineTool(rig.session, "ask_user", { kind: "client", description: "Asks the user", parameters: { type: "object" }, replay: "safe" });
        const lane = await rig.harness.lane("main");
        await lane.setActiveTools(["ask_user", "quick"]);
        const operationId = unwrap(await lane.accept({ kind: "prompt", prompt: "go" })).operationId;
        const waiting = unwrap(await lane.drive({ operationId }));
        expect(waiting).toMatchObject({ kind: "waiting", reason: "client_tool" });
        const batch = lane.state.operation?.state.at === "tools" ? lane.state.operation.state.batch : undefined;
        expect(batch?.calls.map((call) => call.status)).toEqual(["effect_pending", "outcome_ready"]);
        // A second pass finds nothing to do either, and parks again.
        expect(unwrap(await lane.drive({ operationId }))).toMatchObject({ kind: "waiting", reason: "client_tool" });

        const assistant = transcriptOf(lane).at(-1);
        const call = assistant?.type === "message" && assistant.message.role === "assistant" ? assistant.message.content.find((block) => block.type === "toolCall") : undefined;
        if (call?.type !== "toolCall") throw new Error("no client call");
        unwrap(await lane.submitToolResult(operationId, call.id, { content: [{ type: "text", text: "yes" }] }));
        expect(settledRecord(await lane.drive({ operationId })).status).toBe("completed");
        expect(shapeOf(transcriptOf(lane)).slice(2)).toEqual([
          { role: "toolResult", text: "yes", isError: false },
          { role: "toolResult", text: "quick answer", isError: false },
          { role: "assistant", stopReason: "stop", text: "both answered" },
        ]);
        expect(checkInvariants(rig.session)).toEqual([]);
      },
      {
        model: SCRIPT,
        steps: [{ toolCalls: [{ name: "ask_user", arguments: {} }, { name: "quick", arguments: {} }] }, { text: "both answered" }],
        tools: testTools({ quick: { run: async () => text("quick answer") } }),
      },
    );
  });
});
