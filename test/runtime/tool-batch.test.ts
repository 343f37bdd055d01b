import { describe, expect, it } from "vitest";
import type { HarnessEvent } from "../../schema/lane.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import { SCRIPT, withRig, leftoverOperationValues, type Rig } from "./helpers.ts";
import { checkInvariants } from "./invariants.ts";
import { shapeOf, transcriptOf, until } from "./crash-rig.ts";
import { foldEvents, openWatched } from "./watch-fold.ts";
import { executionsOf, gate, testTools, text, type TestToolSpec } from "./tool-helpers.ts";
import { PAYLOAD_LIMIT_BYTES } from "../../harness/session/storage.ts";

// The tools leaf with executing tools (reference §4.8, ARCHITECTURE D11): modes, placement order,
// terminate, added tools, hooks, and abort while a tool runs.

const calls = (...names: string[]): ScriptStep => ({ toolCalls: names.map((name, i) => ({ name, arguments: { n: i } })) });

async function runWith(
  specs: Record<string, TestToolSpec>,
  steps: ScriptStep[],
  body: (rig: Rig, run: () => Promise<{ operationId: string; settled: Promise<unknown> }>) => Promise<void>,
  options: { active?: string[]; sequential?: boolean } = {},
): Promise<void> {
  await withRig(
    async (rig) => {
      if (options.sequential) await rig.harness.updateSettings({ toolExecution: "sequential" });
      const lane = await rig.harness.lane("main");
      await lane.setActiveTools(options.active ?? Object.keys(specs));
      await body(rig, async () => {
        const accepted = await lane.accept({ kind: "prompt", prompt: "go" });
        if (!accepted.ok) throw new Error("not accepted");
        const operationId = accepted.value.operationId;
        return { operationId, settled: lane.drive({ operationId, waitForRetry: true }) };
      });
    },
    { model: SCRIPT, steps, tools: testTools(specs) },
  );
}

const toolEvents = (events: readonly HarnessEvent[]) =>
  events.flatMap((event) => (event.type === "tool_start" || event.type === "tool_end" ? [`${event.type}:${event.toolName}`] : []));

describe("tool batches", () => {
  it("parallel mode: calls run at once, outcomes stage in completion order, results are placed in source order", async () => {
    const first = gate();
    const second = gate();
    const started: string[] = [];
    await runWith(
      {
        slow: { run: async () => (started.push("slow"), await first.promise, text("slow done")) },
        fast: { run: async () => (started.push("fast"), await second.promise, text("fast done")) },
      },
      [calls("slow", "fast"), { text: "after tools" }],
      async (rig, run) => {
        const { settled } = await run();
        await until(() => started.length === 2, "both tools to start");
        second.open();
        await until(() => rig.events.some((event) => event.type === "tool_end" && event.toolName === "fast"), "fast to stage");
        // The fast result is staged but not placed: the slow call before it is still running.
        expect(rig.harness.getLane("main")?.state.operation?.state).toMatchObject({ at: "tools" });
        first.open();
        await settled;
        expect(toolEvents(rig.events)).toEqual(["tool_start:slow", "tool_start:fast", "tool_end:fast", "tool_end:slow"]);
        const shape = shapeOf(transcriptOf(rig.harness.getLane("main")!));
        expect(shape.map((row) => row.text)).toEqual(["go", "[call slow][call fast]", "slow done", "fast done", "after tools"]);
        expect(checkInvariants(rig.session)).toEqual([]);
      },
    );
  });

  it("sequential mode (setting or a tool's own mode): the next call starts only after the previous one staged", async () => {
    for (const options of [{ sequential: true }, { sequential: false, mode: "sequential" as const }]) {
      const order: string[] = [];
      await runWith(
        {
          a: { run: async () => (order.push("a start"), await Promise.resolve(), order.push("a end"), text("A")) },
          b: { ...(options.mode && { executionMode: options.mode }), run: async () => (order.push("b start"), text("B")) },
        },
        [calls("a", "b"), { text: "ok" }],
        async (rig, run) => {
          await (await run()).settled;
          expect(order).toEqual(["a start", "a end", "b start"]);
          expect(toolEvents(rig.events)).toEqual(["tool_start:a", "tool_end:a", "tool_start:b", "tool_end:b"]);
        },
        { sequential: options.sequential },
      );
    }
  });

  it("terminate on every result ends the run without another assistant turn", async () => {
    await runWith({ done: { run: async () => ({ ...text("final"), terminate: true }) } }, [calls("done", "done")], async (rig, run) => {
      const driven = await (await run()).settled;
      expect(driven).toMatchObject({ ok: true, value: { kind: "settled", outcome: { status: "completed" } } });
      const shape = shapeOf(transcriptOf(rig.harness.getLane("main")!));
      expect(shape.at(-1)).toEqual({ role: "toolResult", text: "final", isError: false });
    });
  });

  it("a result larger than an entry may hold settles as an error result instead of failing its commit for ever", async () => {
    const huge = "x".repeat(PAYLOAD_LIMIT_BYTES + 1);
    await runWith({ dump: { run: async () => ({ ...text(huge), terminate: true }) } }, [calls("dump"), { text: "after" }], async (rig, run) => {
      const driven = await (await run()).settled;
      expect(driven).toMatchObject({ ok: true, value: { kind: "settled", outcome: { status: "completed" } } });
      const results = shapeOf(transcriptOf(rig.harness.getLane("main")!)).filter((message) => message.role === "toolResult");
      expect(results).toHaveLength(1);
      expect(results[0]).toMatchObject({ isError: true });
      expect(JSON.stringify(results[0])).toContain("can be kept");
      expect(checkInvariants(rig.session)).toEqual([]);
    });
  });

  it("addedToolNames extend the lane's active tools durably at placement, with config_update", async () => {
    await runWith(
      { grow: { run: async () => ({ ...text("grown"), addedToolNames: ["extra"] }) }, extra: { run: async () => text("extra ran") } },
      [calls("grow"), calls("extra"), { text: "end" }],
      async (rig, run) => {
        await (await run()).settled;
        const lane = rig.harness.getLane("main")!;
        expect(lane.state.configuration.activeToolNames).toEqual(["grow", "extra"]);
        expect(rig.events).toContainEqual(expect.objectContaining({ type: "config_update", property: "activeTools", value: ["grow", "extra"], previous: ["grow"] }));
        expect(shapeOf(transcriptOf(lane)).map((row) => row.text)).toContain("extra ran");
      },
      { active: ["grow"] },
    );
  });

  it("a call to an inactive tool or with invalid arguments settles as a synthetic error without executing", async () => {
    await runWith(
      { strict: { parameters: { type: "object", properties: { n: { type: "string" } }, required: ["n"] }, run: async () => text("ran") }, hidden: { run: async () => text("ran") } },
      [calls("strict", "hidden"), { text: "ok" }],
      async (rig, run) => {
        await (await run()).settled;
        const results = shapeOf(transcriptOf(rig.harness.getLane("main")!)).filter((row) => row.role === "toolResult");
        expect(results[0]?.text).toMatch(/^Invalid arguments for strict: .*string/);
        expect(results[1]?.text).toBe("Tool hidden is not available.");
        expect(executionsOf(rig.session)).toEqual([]);
      },
      { active: ["strict"] },
    );
  });

  it("before_tool may replace the arguments (revalidated) or block; after_tool patches the outcome", async () => {
    const seen: unknown[] = [];
    await runWith(
      { echo: { run: async (args) => (seen.push(args), text(`echo ${JSON.stringify(args)}`)) } },
      [calls("echo", "echo"), { text: "ok" }],
      async (rig, run) => {
        let count = 0;
        rig.harness.hooks.on("before_tool", () => (++count === 1 ? { args: { replaced: true } } : { block: { reason: "not allowed" } }));
        rig.harness.hooks.on("after_tool", (event) => ({ content: [{ type: "text", text: `${event.content[0]?.type === "text" ? event.content[0].text : ""} (patched)` }] }));
        await (await run()).settled;
        expect(seen).toEqual([{ replaced: true }]);
        const results = shapeOf(transcriptOf(rig.harness.getLane("main")!)).filter((row) => row.role === "toolResult");
        expect(results).toEqual([
          { role: "toolResult", text: 'echo {"replaced":true} (patched)', isError: false },
          { role: "toolResult", text: "not allowed", isError: true },
        ]);
        expect(rig.events.find((event) => event.type === "tool_start")).toMatchObject({ args: { replaced: true } });
      },
    );
  });

  it("a tool that throws becomes an error result, not a failed run", async () => {
    await runWith({ boom: { run: async () => Promise.reject(new Error("kaboom")) } }, [calls("boom"), { text: "recovered" }], async (rig, run) => {
      const driven = await (await run()).settled;
      expect(driven).toMatchObject({ ok: true, value: { outcome: { status: "completed" } } });
      expect(shapeOf(transcriptOf(rig.harness.getLane("main")!))[2]).toEqual({ role: "toolResult", text: "kaboom", isError: true });
    });
  });

  it("a checkpoint requested after the call staged is fenced: nothing of it is stored", async () => {
    let late: (() => void) | undefined;
    await runWith(
      {
        chatty: {
          run: async (_args, { onUpdate }) => {
            onUpdate(text("half way"), { checkpoint: true });
            late = () => onUpdate(text("too late"), { checkpoint: true });
            return text("done");
          },
        },
      },
      [calls("chatty"), { text: "ok" }],
      async (rig, run) => {
        const { operationId, settled } = await run();
        await settled;
        late?.();
        expect(rig.events.filter((event) => event.type === "tool_update")).toHaveLength(1);
        expect(leftoverOperationValues(rig.session, operationId)).toEqual([]);
        expect(checkInvariants(rig.session)).toEqual([]);
      },
    );
  });

  it("memos are fenced to the live call and deleted at staging; the step helper records once", async () => {
    await runWith(
      {
        memo: {
          run: async (_args, { invocation }) => {
            await invocation.setMemo("a", 1);
            const a = await invocation.getMemo("a");
            await expect(invocation.setMemo("bad:name", 1)).rejects.toThrow(/memo name/);
            return text(`memo ${JSON.stringify(a)}`);
          },
        },
      },
      [calls("memo"), { text: "ok" }],
      async (rig, run) => {
        const { operationId, settled } = await run();
        await settled;
        expect(shapeOf(transcriptOf(rig.harness.getLane("main")!))[2]?.text).toBe("memo 1");
        expect(leftoverOperationValues(rig.session, operationId)).toEqual([]);
      },
    );
  });

  it("abort while a tool runs: the tool's signal aborts, its result is placed, then the run ends aborted", async () => {
    await runWith(
      {
        long: {
          run: (_args, { signal }) =>
            new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(new Error("stopped by abort")), { once: true })),
        },
        later: { run: async () => text("never") },
      },
      [calls("long", "later"), { text: "unused" }],
      async (rig, run) => {
        const { operationId, settled } = await run();
        await until(() => rig.events.some((event) => event.type === "tool_start" && event.toolName === "later"), "both intents");
        const lane = rig.harness.getLane("main")!;
        await lane.requestAbort(operationId);
        const driven = await settled;
        expect(driven).toMatchObject({ ok: true, value: { outcome: { status: "aborted" } } });
        const results = shapeOf(transcriptOf(lane)).filter((row) => row.role === "toolResult");
        expect(results[0]).toEqual({ role: "toolResult", text: "stopped by abort", isError: true });
        expect(results).toHaveLength(2);
        expect(checkInvariants(rig.session)).toEqual([]);
      },
    );
  });

  it("fold equivalence: a watch snapshot folded over a tool run's events equals a later snapshot, mid-batch included", async () => {
    const hold = gate();
    await runWith(
      {
        held: { run: async (_args, { onUpdate }) => (onUpdate(text("working")), await hold.promise, text("held done")) },
        quick: { run: async () => text("quick done") },
      },
      [calls("held", "quick"), { text: "end" }],
      async (rig, run) => {
        const lane = rig.harness.getLane("main")!;
        const watched = await openWatched(lane);
        const { settled } = await run();
        await until(() => rig.events.some((event) => event.type === "tool_end" && event.toolName === "quick"), "quick staged");
        await until(() => rig.events.some((event) => event.type === "tool_update"), "a live update");
        // Settled-but-unplaced and running rows, mid-batch.
        const mid = await lane.watch();
        expect(foldEvents(watched.captured, watched.events)).toEqual(mid.snapshot);
        mid.unsubscribe();
        hold.open();
        await settled;
        const later = await lane.watch();
        expect(foldEvents(watched.captured, watched.events)).toEqual(later.snapshot);
        later.unsubscribe();
        watched.watch.unsubscribe();
      },
    );
  });
});
