import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../../durable-objects/session/session-object.ts";
import { SqlSessionStorage } from "../../../durable-objects/session/storage/sql-session-storage.ts";
import { value } from "../../../harness/session/addresses.ts";
import { insertEntry } from "../../../harness/session/writes.ts";
import { appendScriptSteps } from "../../../models/scripted/script-source.ts";
import { createSession } from "../../helpers/sessions.ts";
import { checkInvariants, objectInvariants } from "../invariants.ts";
import { acceptPrompt, attach, settledRecord, transcriptOf } from "../crash-rig.ts";
import { unwrap } from "../drive-helpers.ts";
import { defineTool, testTools } from "../tool-helpers.ts";

// The invariants the crash matrix added to the one checker (QUALITY R1) see what they claim to:
// queued input lost or placed twice, a `replay: "never"` tool run twice, a tool call answered by
// two entries, an assistant response whose usage row is not its usage, and a client result left
// behind after the terminal commit. Each is planted in a settled session and must be reported.

describe("the crash matrix's invariants in the checker", () => {
  it("reports nothing for a clean run with queued input, and each planted violation", async () => {
    const { stub } = await createSession("matrix_checker");
    const result = await runInDurableObject(stub, async (instance: SessionObject, state) => {
      const session = instance.session();
      await appendScriptSteps(session, [{ toolCalls: [{ name: "ask_user", arguments: {} }] }, { text: "done" }]);
      const rig = await attach(instance, { tools: testTools({}) });
      await defineTool(session, "ask_user", { kind: "client", description: "asks", parameters: { type: "object" }, replay: "safe" });
      const lane = await rig.harness.lane("main");
      unwrap(await lane.setActiveTools(["ask_user"]));
      const operationId = await acceptPrompt(lane, "go");
      await lane.drive({ operationId });
      unwrap(await lane.nextRun("kept for later"));
      const assistant = transcriptOf(lane)[1];
      const call = assistant?.type === "message" && assistant.message.role === "assistant" ? assistant.message.content.find((block) => block.type === "toolCall") : undefined;
      if (call?.type !== "toolCall") throw new Error(`no call in ${JSON.stringify(transcriptOf(lane))}`);
      unwrap(await lane.submitToolResult(operationId, call.id, { content: [{ type: "text", text: "yes" }] }));
      settledRecord(await lane.drive({ operationId }));
      const clean = objectInvariants(instance, state, undefined, { queued: ["kept for later"], effects: [{ tool: "x", replay: "never", executions: 1 }] });

      const transcript = transcriptOf(lane);
      const placed = transcript[2];
      const answer = transcript[3];
      if (placed?.type !== "message" || answer?.type !== "message" || answer.message.role !== "assistant") throw new Error("unexpected transcript");
      await session.mutate((m) =>
        m.commit([
          // The same call answered a second time, under another id.
          insertEntry({ id: "01900000-0000-7000-8000-000000000003", parentId: placed.id, type: "message", message: placed.message }),
          // A client result that outlived its operation.
          { kind: "value", op: "set", namespace: "pi.op.tool_result", key: `${operationId}:${placed.id}`, value: { content: [] } },
        ]),
      );
      const ledger = SqlSessionStorage.open(state.storage);
      if (!ledger) throw new Error("no ledger");
      const rows = ledger.scanUsage();
      const tampered = { scanUsage: () => rows.map((row) => (row.entryId === answer.id ? { ...row, usage: { ...row.usage, output: row.usage.output + 1 } } : row)) };
      const corrupt = checkInvariants(session, {
        ledger: tampered,
        queued: ["kept for later", "never queued", "go"],
        effects: [{ tool: "charge_card", replay: "never", executions: 2 }, { tool: "lookup", replay: "safe", executions: 2 }],
      });
      return { clean, corrupt, pending: session.scanValues(value("pi.pending.entry", "")).length };
    });
    expect(result.clean).toEqual([]);
    expect(result.pending).toBe(1);
    const expected = [
      /tool call .* has two placed results/,
      /pi\.op\.tool_result\/.* survives the terminal/,
      /usage row of .* ≠ its message's usage/,
      /stats\.usage ≠ ledger sum/,
      /queued input "never queued" is placed 0 and pending 0 times/,
      /replay "never" tool charge_card executed 2 times/,
    ];
    for (const pattern of expected) expect(result.corrupt.some((violation) => pattern.test(violation)), `${String(pattern)} in ${JSON.stringify(result.corrupt)}`).toBe(true);
    // "go" is placed once (the prompt): not a violation; a safe tool may run twice.
    expect(result.corrupt).toHaveLength(expected.length);
  });
});
