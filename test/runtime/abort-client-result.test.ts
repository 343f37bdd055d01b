import { describe, expect, it } from "vitest";
import { settledRecord, unwrap } from "./drive-helpers.ts";
import { SCRIPT, withRig } from "./helpers.ts";
import { shapeOf, transcriptOf } from "./crash-rig.ts";
import { defineTool, testTools } from "./tool-helpers.ts";

// A client's answer to a tool call is stored on the line (202, tool-results.ts) and staged by the
// run's next pass. An abort whose marker commits after that answer but before a pass staged it
// (the pass starts after the line is released, or the object died in between) must still place
// the answer as the call's result: reference §4.1/§4.5, cancellation prevents new intents but
// never erases admitted work, and the client's accepted answer is that work (a live pass already
// placed it so; the reconciling pass now does too, batch.ts).

describe("a client tool answer accepted before the abort marker", () => {
  it("is placed as the call's result (not replaced by 'cancelled') when the abort lands before a pass staged it", async () => {
    await withRig(
      async (rig) => {
        await defineTool(rig.session, "ask_user", { kind: "client", description: "Asks the user", parameters: { type: "object" } });
        const lane = await rig.harness.lane("main");
        await lane.setActiveTools(["ask_user"]);
        const operationId = unwrap(await lane.accept({ kind: "prompt", prompt: "go" })).operationId;
        expect(unwrap(await lane.drive({ operationId }))).toMatchObject({ kind: "waiting", reason: "client_tool" });
        const assistant = transcriptOf(lane).at(-1);
        const call = assistant?.type === "message" && assistant.message.role === "assistant" ? assistant.message.content.find((block) => block.type === "toolCall") : undefined;
        if (call?.type !== "toolCall") throw new Error("no client call");

        // Accepted: the answer is durable (the API answers 202 here).
        expect(unwrap(await lane.submitToolResult(operationId, call.id, { content: [{ type: "text", text: "approved by the user" }] }))).toEqual({ accepted: true });
        // The abort's marker commits before any pass staged the answer.
        expect(unwrap(await lane.requestAbort(operationId))).toMatchObject({ newlyRequested: true });
        expect(settledRecord(await lane.drive({ operationId })).status).toBe("aborted");

        const results = shapeOf(transcriptOf(lane)).filter((entry) => entry.role === "toolResult");
        expect(results).toEqual([{ role: "toolResult", text: "approved by the user", isError: false }]);
      },
      { model: SCRIPT, steps: [{ toolCalls: [{ name: "ask_user", arguments: {} }] }, { text: "never asked" }], tools: testTools({}) },
    );
  });
});
