import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { AgentHarness } from "../../harness/runtime/harness.ts";
import { createModelRegistry } from "../../models/registry.ts";
import { appendScriptSteps, SessionScriptSource } from "../../models/scripted/script-source.ts";
import { createToolRegistry } from "../../tools/registry.ts";
import { createSession } from "../helpers/sessions.ts";
import { manualClock, settledRecord, unwrap } from "./drive-helpers.ts";
import { SCRIPT } from "./helpers.ts";
import { shapeOf, transcriptOf } from "./crash-rig.ts";
import { defineTool } from "./tool-helpers.ts";

// A client tool's optional deadline (ARCHITECTURE D11), on a manual clock so "after the deadline"
// is exact: the wait parks with a wake due at the deadline, the call then ends with an error
// result, and a result posted once the deadline passed is refused even if no pass has staged the
// timeout yet — the timeout is the call's outcome, and a late answer must not replace it.

const TIMEOUT_MS = 5000;

async function waitingClientCall(body: (rig: { lane: Awaited<ReturnType<AgentHarness["lane"]>>; operationId: string; toolCallId: string; clock: ReturnType<typeof manualClock>; wakes: (number | "settled")[] }) => Promise<void>) {
  const { stub } = await createSession("deadline");
  await runInDurableObject(stub, async (instance: SessionObject) => {
    const session = instance.session();
    await appendScriptSteps(session, [{ toolCalls: [{ name: "ask_user", arguments: { question: "ok?" } }] }, { text: "after the wait" }]);
    await defineTool(session, "ask_user", { kind: "client", description: "Asks the user", parameters: { type: "object" }, replay: "safe", timeoutMs: TIMEOUT_MS });
    const clock = manualClock();
    const wakes: (number | "settled")[] = [];
    const { harness } = await AgentHarness.create({
      session,
      models: createModelRegistry({ scripted: true, scriptSource: () => new SessionScriptSource(session) }),
      tools: createToolRegistry({ session }),
      seed: { model: SCRIPT },
      clock: clock.now,
      wake: { due: (_lane, _operationId, at) => wakes.push(at), settled: () => wakes.push("settled") },
    });
    const lane = await harness.lane("main");
    await lane.setActiveTools(["ask_user"]);
    const operationId = unwrap(await lane.accept({ kind: "prompt", prompt: "go" })).operationId;
    const waiting = unwrap(await lane.drive({ operationId }));
    expect(waiting).toMatchObject({ kind: "waiting", reason: "client_tool" });
    const assistant = transcriptOf(lane).at(-1);
    const call = assistant?.type === "message" && assistant.message.role === "assistant" ? assistant.message.content.find((block) => block.type === "toolCall") : undefined;
    if (call?.type !== "toolCall") throw new Error("no waiting tool call");
    await body({ lane, operationId, toolCallId: call.id, clock, wakes });
  });
}

describe("client tool deadline", () => {
  it("the wait is due at the deadline; past it the call ends with an error result and the run goes on", async () => {
    await waitingClientCall(async ({ lane, operationId, clock, wakes }) => {
      expect(wakes).toContain(clock.now() + TIMEOUT_MS);
      clock.advance(TIMEOUT_MS);
      const record = settledRecord(await lane.drive({ operationId }));
      expect(record.status).toBe("completed");
      expect(shapeOf(transcriptOf(lane)).slice(-2)).toEqual([
        { role: "toolResult", text: "No result was posted for ask_user in time.", isError: true },
        { role: "assistant", stopReason: "stop", text: "after the wait" },
      ]);
    });
  });

  it("a result posted after the deadline is refused (ToolResultConflict) even before a pass staged the timeout", async () => {
    await waitingClientCall(async ({ lane, operationId, toolCallId, clock }) => {
      clock.advance(TIMEOUT_MS);
      const late = await lane.submitToolResult(operationId, toolCallId, { content: [{ type: "text", text: "too late" }] });
      expect(late).toMatchObject({ ok: false, error: { code: "ToolResultConflict", toolCallId } });
      settledRecord(await lane.drive({ operationId }));
      expect(shapeOf(transcriptOf(lane)).at(-2)).toEqual({ role: "toolResult", text: "No result was posted for ask_user in time.", isError: true });
    });
  });

  it("a result posted just before the deadline is taken", async () => {
    await waitingClientCall(async ({ lane, operationId, toolCallId, clock }) => {
      clock.advance(TIMEOUT_MS - 1);
      unwrap(await lane.submitToolResult(operationId, toolCallId, { content: [{ type: "text", text: "in time" }] }));
      clock.advance(1);
      settledRecord(await lane.drive({ operationId }));
      expect(shapeOf(transcriptOf(lane)).at(-2)).toEqual({ role: "toolResult", text: "in time", isError: false });
    });
  });
});
