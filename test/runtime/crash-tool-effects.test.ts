import { describe, expect, it } from "vitest";
import { INTERRUPTED_TOOL_MESSAGE } from "../../harness/runtime/drive/tools/batch.ts";
import type { StateAt, OperationState } from "../../harness/runtime/types.ts";
import { crashAt, never, settledRecord } from "./crash-rig.ts";
import { executionsOf, testTools, text } from "./tool-helpers.ts";
import type { ToolProgress } from "../../harness/execution/tools.ts";
import type { Usage } from "../../schema/usage.ts";

// A real kill with a call `effect_pending` (reference §4.6 tools row, §4.8 "Restored
// effect_pending"): a `replay: "never"` tool is never run again (the interruption result carries
// its latest checkpoint and the four-part marker); a `"safe"` tool runs again with the same
// invocation id and the memos it recorded. Each test tool's executions are counted in storage.

const steps = [{ toolCalls: [{ name: "effect", arguments: { q: 1 } }] }, { text: "after the tool" }];

function batchOf(state: OperationState | null): StateAt<"tools"> {
  if (state?.at !== "tools") throw new Error(`not at tools: ${state?.at}`);
  return state;
}

/** A tool that checkpoints, records a memo, then never returns in the first process. */
function parkingTool(replay: "never" | "safe", parkedFlag: { parked: boolean }, checkpoint: ToolProgress = text("progress 1")) {
  return testTools({
    effect: {
      replay,
      run: async (_args, { onUpdate, invocation }) => {
        const first = (await invocation.getMemo("first")) === undefined;
        if (first) {
          await invocation.setMemo("first", invocation.invocationId);
          onUpdate(checkpoint, { checkpoint: true });
          // Let the checkpoint commit, then park until the kill.
          await new Promise((resolve) => setTimeout(resolve, 20));
          parkedFlag.parked = true;
          return never();
        }
        return text(`resumed ${JSON.stringify(await invocation.getMemo("first"))} as ${invocation.invocationId}`);
      },
    },
  });
}

describe("crash with a tool call effect_pending", () => {
  it('replay "never": the restored call is not executed again; its result is the latest checkpoint plus the interruption marker', async () => {
    const flag = { parked: false };
    const crashed = await crashAt({
      steps,
      activeTools: ["effect"],
      tools: parkingTool("never", flag),
      park: () => () => flag.parked,
    });
    const batch = batchOf(crashed.parked).batch;
    expect(batch.calls[0]).toMatchObject({ status: "effect_pending", replay: "never" });
    expect(settledRecord(crashed.driven).status).toBe("completed");
    const result = crashed.shape[2];
    expect(result).toEqual({ role: "toolResult", text: `progress 1${INTERRUPTED_TOOL_MESSAGE}`, isError: true });
    expect(crashed.events.filter((event) => event.type === "tool_start")).toEqual([]);
    expect(crashed.events.find((event) => event.type === "tool_end")).toMatchObject({ recovery: true, isError: true });
    expect(crashed.shape[3]).toMatchObject({ role: "assistant", text: "after the tool" });
    expect(crashed.violations).toEqual([]);
  });

  it('replay "safe": the restored call runs again with the same invocation id and its memos, once, tagged recovery', async () => {
    const flag = { parked: false };
    let executionsAfter = 0;
    const crashed = await crashAt({
      steps,
      activeTools: ["effect"],
      tools: parkingTool("safe", flag),
      park: () => () => flag.parked,
      reopen: (rig) => {
        rig.harness.events.on("tool_end", () => {
          executionsAfter = executionsOf(rig.session).length;
        });
      },
    });
    const batch = batchOf(crashed.parked).batch;
    const invocationId = batch.calls[0]?.resultEntryId;
    expect(batch.calls[0]).toMatchObject({ status: "effect_pending", replay: "safe" });
    expect(settledRecord(crashed.driven).status).toBe("completed");
    expect(crashed.shape[2]).toEqual({ role: "toolResult", text: `resumed ${JSON.stringify(invocationId)} as ${invocationId}`, isError: false });
    // One execution before the kill, exactly one replay after it.
    expect(executionsAfter).toBe(2);
    expect(crashed.events.find((event) => event.type === "tool_start")).toMatchObject({ recovery: true, args: { q: 1 } });
    expect(crashed.events.find((event) => event.type === "tool_end")).toMatchObject({ isError: false });
    // Placed exactly once, in source order, and the result entry id is the invocation id.
    expect(crashed.transcript.filter((entry) => entry.id === invocationId)).toHaveLength(1);
    expect(crashed.violations).toEqual([]);
  });

  it('a "safe" call under a durable abort is interrupted, never replayed', async () => {
    const flag = { parked: false };
    const crashed = await crashAt({
      steps,
      activeTools: ["effect"],
      tools: parkingTool("safe", flag),
      park: () => () => flag.parked,
      reopen: () => {},
      drive: async (lane, operationId) => {
        await lane.requestAbort(operationId);
        return lane.drive({ operationId, waitForRetry: true });
      },
    });
    expect(settledRecord(crashed.driven).status).toBe("aborted");
    expect(crashed.shape[2]?.text.endsWith(INTERRUPTED_TOOL_MESSAGE)).toBe(true);
    expect(crashed.events.filter((event) => event.type === "tool_start")).toEqual([]);
    expect(crashed.violations).toEqual([]);
  });

  it("the interruption result keeps the checkpoint's images, details and usage; the usage enters the ledger once", async () => {
    const flag = { parked: false };
    const usage: Usage = { input: 120, output: 30, cacheRead: 0, cacheWrite: 0, totalTokens: 150, cost: { input: 0.01, output: 0.02, cacheRead: 0, cacheWrite: 0, total: 0.03 } };
    const image = { type: "image" as const, data: "iVBORw0KGgo=", mimeType: "image/png" };
    const checkpoint: ToolProgress = { content: [{ type: "text", text: "rendered page 1" }, image], details: { pages: 1 }, usage };
    let restoredRow: unknown;
    const crashed = await crashAt({
      steps,
      activeTools: ["effect"],
      tools: parkingTool("never", flag, checkpoint),
      park: () => () => flag.parked,
      drive: async (lane, operationId) => {
        // What a watcher of the restored call is shown before it settles: the whole checkpoint.
        const watch = await lane.watch();
        restoredRow = watch.snapshot.operation?.runningTools[0];
        watch.unsubscribe();
        return lane.drive({ operationId, waitForRetry: true });
      },
    });
    expect(settledRecord(crashed.driven).status).toBe("completed");
    expect(restoredRow).toMatchObject({ status: "running", result: { content: checkpoint.content, details: { pages: 1 }, usage } });
    const placed = crashed.transcript[2];
    const result = placed?.type === "message" && placed.message.role === "toolResult" ? placed.message : undefined;
    expect(result).toMatchObject({ isError: true, details: { pages: 1 }, usage });
    expect(result?.content).toEqual([{ type: "text", text: "rendered page 1" }, image, { type: "text", text: INTERRUPTED_TOOL_MESSAGE }]);
    // The placement wrote the tool's usage row: the totals grew by exactly the checkpoint's usage.
    const rows = crashed.events.flatMap((event) => (event.type === "usage" && event.row.entryId === placed?.id ? [event.row.usage] : []));
    expect(rows).toEqual([usage]);
    expect(crashed.violations).toEqual([]);
  });
});
