import { describe, expect, it } from "vitest";
import { uuidv7Timestamp } from "../../harness/session/ids.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import { briefs, kinds, ofType, runRecord, transcript, withDriveRig, type DriveRig } from "./drive-helpers.ts";
import { leftoverOperationValues } from "./helpers.ts";

// Assistant response classification (reference §3.5), first match wins, driven end to end through
// `prompt` over the scripted `script` model.

/** Prompts once over the given script and reports what the run left behind. */
async function classify(steps: ScriptStep[], setup?: (rig: DriveRig) => Promise<void>) {
  return withDriveRig(
    async (rig) => {
      await setup?.(rig);
      const lane = await rig.harness.lane("main");
      const record = runRecord(await lane.prompt("go"));
      const entries = transcript(lane);
      return {
        record,
        briefs: briefs(lane),
        entries,
        tip: lane.getTipId(),
        events: rig.events,
        leftovers: leftoverOperationValues(rig.session, record.operationId),
        stats: rig.session.getStats(),
        info: lane.inspectExecution(),
      };
    },
    { steps },
  );
}

const retryPolicy = (maxRetries: number) => async (rig: DriveRig) => {
  await rig.harness.updateSettings({ retry: { enabled: true, maxRetries, baseDelayMs: 1 } });
};

describe("classification: final answers", () => {
  it("stop → completed, the record points at the final assistant", async () => {
    const run = await classify([{ thinking: "hmm", text: "Hello there" }]);
    expect(run.record).toMatchObject({ kind: "run", status: "completed", fromTipId: null });
    expect(run.record.error).toBeUndefined();
    expect(run.record.tipId).toBe(run.tip);
    expect(run.entries.at(-1)?.id).toBe(run.tip);
    expect(run.briefs).toEqual(["user: go", "assistant(stop): [thinking]Hello there"]);
    expect(run.leftovers).toEqual([]);
    expect(run.info.current).toBeNull();
    expect(ofType(run.events, "run_end")).toMatchObject([{ status: "completed", tipId: run.tip }]);
  });

  it("a genuine output-limit length stop → completed", async () => {
    const run = await classify([{ length: true }]);
    expect(run.record.status).toBe("completed");
    expect(run.briefs).toEqual(["user: go", "assistant(length): "]);
    expect(run.leftovers).toEqual([]);
  });
});

describe("classification: a multi-turn run", () => {
  it("places the synthetic unknown-tool result, then the next assistant answers, with exact events", async () => {
    const run = await classify([{ toolCalls: [{ name: "lookup", arguments: { q: "x" } }] }, { text: "done" }]);
    expect(run.record.status).toBe("completed");
    expect(run.briefs).toEqual([
      "user: go",
      "assistant(toolUse): [call lookup]",
      "toolResult(lookup, error): Tool lookup is not available.",
      "assistant(stop): done",
    ]);
    // The result id is a follower of the response id (same UUIDv7 time prefix).
    const [, assistant, result] = run.entries;
    expect(uuidv7Timestamp(result?.id ?? "")).toBe(uuidv7Timestamp(assistant?.id ?? ""));
    expect(kinds(run.events)).toEqual([
      "lane_created",
      "run_start",
      "message_start", "message_end", "entry_added", "stats", // the prompt
      "turn_start",
      "message_start", "message_end", "entry_added", "usage", "stats", // the tool-use assistant
      "tool_start", "tool_end", // staged synthetic outcome
      "message_start", "message_end", "entry_added", "stats", // the placed result
      "turn_end",
      "turn_start",
      "message_start", "message_end", "entry_added", "usage", "stats",
      "turn_end",
      "run_end",
    ]);
    const turns = ofType(run.events, "turn_start").map((event) => event.turnId);
    expect(new Set(turns).size).toBe(2);
    const [first, second] = ofType(run.events, "turn_end");
    expect(first).toMatchObject({ turnId: turns[0], message: { stopReason: "toolUse" } });
    expect(first?.toolResults).toMatchObject([{ role: "toolResult", toolName: "lookup", isError: true }]);
    expect(second).toMatchObject({ turnId: turns[1], message: { stopReason: "stop" }, toolResults: [] });
    expect(ofType(run.events, "tool_start")).toMatchObject([{ turnId: turns[0], toolName: "lookup", args: { q: "x" } }]);
    expect(ofType(run.events, "tool_end")).toMatchObject([{ turnId: turns[0], toolName: "lookup", isError: true, terminate: false }]);
    expect(ofType(run.events, "entry_added").map((event) => event.entry.id)).toEqual(run.entries.map((entry) => entry.id));
    // message_update (wire-throttled) only ever appears inside an assistant's start…end.
    let open = false;
    for (const event of run.events) {
      if (event.type === "message_start" && event.message.role === "assistant") open = true;
      if (event.type === "message_end") open = false;
      if (event.type === "message_update") expect(open).toBe(true);
    }
    expect(run.leftovers).toEqual([]);
  });
});

describe("classification: errors and retries", () => {
  it("a non-retryable error → failed assistant_error, with the record error", async () => {
    const run = await classify([{ error: "the model refused" }]);
    expect(run.record).toMatchObject({ status: "failed", error: { code: "assistant_error", message: "scripted: the model refused" } });
    expect(run.briefs).toEqual(["user: go", "assistant(error): "]);
    expect(run.record.tipId).toBe(run.tip);
    expect(kinds(run.events).slice(-7)).toEqual(["message_start", "message_end", "entry_added", "usage", "stats", "turn_end", "run_end"]);
    expect(ofType(run.events, "run_end")).toMatchObject([{ status: "failed", error: { code: "assistant_error" } }]);
    expect(kinds(run.events).filter((type) => type.startsWith("retry_"))).toEqual([]);
    expect(run.leftovers).toEqual([]);
  });

  it("a retryable error then text → completed after one retry, usage rows for both attempts", async () => {
    const run = await classify(
      [
        { error: "flaky", retryable: true, usage: { input: 11, output: 1 } },
        { text: "recovered", usage: { input: 13, output: 4 } },
      ],
      retryPolicy(2),
    );
    expect(run.record.status).toBe("completed");
    expect(run.briefs).toEqual(["user: go", "assistant(error): ", "assistant(stop): recovered"]);
    const all = kinds(run.events);
    expect(all.slice(all.indexOf("turn_start"))).toEqual([
      "turn_start",
      "message_start", "message_end", "entry_added", "usage", "stats",
      "retry_scheduled",
      "retry_start",
      "message_start", "message_end", "entry_added", "usage", "stats",
      "retry_end",
      "turn_end",
      "run_end",
    ]);
    expect(ofType(run.events, "retry_scheduled")).toMatchObject([{ step: "assistant", attempt: 2, maxAttempts: 3, delayMs: 1 }]);
    expect(ofType(run.events, "retry_start")).toMatchObject([{ step: "assistant", attempt: 2 }]);
    expect(ofType(run.events, "retry_end")).toMatchObject([{ step: "assistant", attempt: 2, success: true }]);
    const [, failed, answered] = run.entries;
    const rows = ofType(run.events, "usage").map((event) => event.row);
    expect(rows.map((row) => [row.entryId, row.usage.input, row.usage.output, row.adjustment])).toEqual([
      [failed?.id, 11, 1, false],
      [answered?.id, 13, 4, false],
    ]);
    expect(run.stats.usage).toMatchObject({ input: 24, output: 5 });
    expect(run.leftovers).toEqual([]);
  });

  it("retries exhausted → failed provider_unavailable, the last retry_end carries the final error", async () => {
    const flaky: ScriptStep = { error: "flaky", retryable: true };
    const run = await classify([flaky, flaky, flaky, { text: "never" }], retryPolicy(2));
    expect(run.record).toMatchObject({ status: "failed", error: { code: "provider_unavailable", details: { attempts: 3 } } });
    expect(run.record.error?.message).toContain("scripted: flaky");
    expect(run.briefs).toEqual(["user: go", "assistant(error): ", "assistant(error): ", "assistant(error): "]);
    expect(ofType(run.events, "retry_scheduled").map((event) => [event.attempt, event.delayMs])).toEqual([
      [2, 1],
      [3, 2],
    ]);
    expect(ofType(run.events, "retry_start").map((event) => event.attempt)).toEqual([2, 3]);
    const finalError = ofType(run.events, "retry_end")[0]?.finalError ?? "";
    expect(ofType(run.events, "retry_end")).toMatchObject([{ attempt: 3, success: false }]);
    expect(finalError).toContain("scripted: flaky");
    expect(run.record.error?.message.endsWith(finalError)).toBe(true);
    expect(ofType(run.events, "usage")).toHaveLength(3);
    expect(kinds(run.events).slice(-3)).toEqual(["retry_end", "turn_end", "run_end"]);
    expect(run.leftovers).toEqual([]);
  });

  it("context overflow → failed context_overflow, checked before retryability", async () => {
    const run = await classify([{ overflow: true }, { text: "never" }], retryPolicy(3));
    expect(run.record).toMatchObject({ status: "failed", error: { code: "context_overflow" } });
    expect(run.briefs).toEqual(["user: go", "assistant(error): "]);
    expect(kinds(run.events).filter((type) => type.startsWith("retry_"))).toEqual([]);
    expect(run.leftovers).toEqual([]);
  });

  it("a recoverable length stop (output below the intended limit) is an overflow", async () => {
    const run = await classify([{ length: true, usage: { output: 10 } }]);
    expect(run.record).toMatchObject({ status: "failed", error: { code: "context_overflow" } });
    expect(run.briefs).toEqual(["user: go", "assistant(error): "]);
  });

  it("toolUse with no tool calls → normalized to error → failed", async () => {
    const run = await classify([{ toolCalls: [] }, { text: "never" }]);
    expect(run.record).toMatchObject({ status: "failed", error: { code: "assistant_error" } });
    expect(run.briefs).toEqual(["user: go", "assistant(error): "]);
    expect(kinds(run.events).filter((type) => type.startsWith("tool_"))).toEqual([]);
    expect(run.leftovers).toEqual([]);
  });
});

describe("classification: truncated tool calls", () => {
  // The scripted provider never combines a length stop with tool calls; an after_response hook
  // (which may rewrite the settled response, §5.1) turns a tool-use response into a genuine
  // output-limit stop (output = the model's maxTokens) that still carries its calls.
  it("a length stop with tool calls stages 'not executed' results and never runs the calls", async () => {
    const run = await classify([{ toolCalls: [{ name: "write_file", arguments: { path: "a" } }] }, { text: "ok" }], async ({ harness }) => {
      harness.hooks.on("after_response", ({ message }) =>
        message.stopReason === "toolUse" ? { message: { ...message, stopReason: "length", usage: { ...message.usage, output: 8192 } } } : undefined,
      );
    });
    expect(run.record.status).toBe("completed");
    expect(run.briefs).toEqual([
      "user: go",
      "assistant(length): [call write_file]",
      "toolResult(write_file, error): The tool call was not executed because its arguments may be truncated (the response hit its output limit).",
      "assistant(stop): ok",
    ]);
    expect(ofType(run.events, "tool_end")).toMatchObject([{ toolName: "write_file", isError: true }]);
    expect(run.leftovers).toEqual([]);
  });
});
