import { describe, expect, it } from "vitest";
import type { AgentMessage } from "../../schema/messages.ts";
import { SCRIPT, types, withRig } from "./helpers.ts";
import { describeMessage, expectOk, ofType, queueOf, queued, settledRecord, transcript, until } from "./queue-helpers.ts";

// Drain points inside a run (reference §3.6, §3.7): the scripted model plays one step per request;
// hooks the pass awaits enqueue input at deterministic points of the run.

const script = { model: SCRIPT };

describe("steer at the run boundary", () => {
  it("a steer queued during a tool turn is placed at the boundary after the tool results and starts a new turn", async () => {
    const result = await withRig(
      async ({ harness, events }) => {
        const lane = await harness.lane("main");
        const contexts: string[][] = [];
        let requests = 0;
        harness.hooks.on("transform_context", (event) => void contexts.push(event.messages.map(describeMessage)));
        harness.hooks.on("before_request", async () => {
          if (requests++ === 0) expectOk(await lane.steer("change course"));
        });
        const admission = expectOk(await lane.accept({ kind: "prompt", prompt: "go" }));
        const record = settledRecord(await lane.drive({ operationId: admission.operationId, waitForRetry: true }));
        return { record, entries: transcript(lane), contexts, events: [...events], queue: queued(lane) };
      },
      { ...script, steps: [{ toolCalls: [{ name: "lookup", arguments: { q: "x" } }] }, { text: "steered" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:go", "assistant:call(lookup)", "toolResult:lookup", "user:change course", "assistant:steered"]);
    // The second request saw the steer as its newest message.
    expect(result.contexts).toEqual([["user:go"], ["user:go", "assistant:call(lookup)", "toolResult:lookup", "user:change course"]]);
    expect(result.queue).toEqual([]);
    // Queued (before_request runs before the turn's intent commit), then the tool turn ends, then the
    // steer is placed (lifecycle, entry_added, queue_update), then the next turn starts.
    const order = types(result.events).filter((type) => ["turn_start", "turn_end", "queue_update", "run_end"].includes(type));
    expect(order).toEqual(["queue_update", "turn_start", "turn_end", "queue_update", "turn_start", "turn_end", "run_end"]);
    const steerAdded = result.events.findIndex((event) => event.type === "entry_added" && event.entry.type === "message" && event.entry.message.role === "user" && event.entry.message.content === "change course");
    const firstTurnEnd = result.events.findIndex((event) => event.type === "turn_end");
    const secondTurnStart = result.events.findIndex((event, index) => event.type === "turn_start" && index > firstTurnEnd);
    expect(steerAdded).toBeGreaterThan(firstTurnEnd);
    expect(steerAdded).toBeLessThan(secondTurnStart);
    expect(queueOf(ofType(result.events, "queue_update")[1])).toEqual([]);
  });

  it("a steer arriving while the answer streams is placed at the following boundary and the run takes another turn", async () => {
    const result = await withRig(
      async ({ harness, events }) => {
        const lane = await harness.lane("main");
        const admission = expectOk(await lane.accept({ kind: "prompt", prompt: "go" }));
        const driven = lane.drive({ operationId: admission.operationId, waitForRetry: true });
        await until(() => events.some((event) => event.type === "message_start" && event.message.role === "assistant"), "the answer to start streaming");
        const steer = expectOk(await lane.steer("mid-stream"));
        const record = settledRecord(await driven);
        return { record, steer, entries: transcript(lane), turns: ofType(events, "turn_start").length };
      },
      { ...script, steps: [{ text: "one two three four five six seven eight", chunkMs: 40 }, { text: "after the steer" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:go", "assistant:one two three four five six seven eight", "user:mid-stream", "assistant:after the steer"]);
    expect(result.turns).toBe(2);
  });

  it("one-at-a-time steering places one steer per boundary", async () => {
    const result = await withRig(
      async ({ harness, events }) => {
        await harness.updateSettings({ steeringMode: "one-at-a-time" });
        const lane = await harness.lane("main");
        let requests = 0;
        harness.hooks.on("before_request", async () => {
          if (requests++ > 0) return;
          expectOk(await lane.steer("first steer"));
          expectOk(await lane.steer("second steer"));
        });
        const record = settledRecord(await lane.prompt("go"));
        return { record, entries: transcript(lane), updates: ofType(events, "queue_update").map(queueOf) };
      },
      { ...script, steps: [{ text: "a" }, { text: "b" }, { text: "c" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:go", "assistant:a", "user:first steer", "assistant:b", "user:second steer", "assistant:c"]);
    expect(result.updates).toEqual([["steer:first steer"], ["steer:first steer", "steer:second steer"], ["steer:second steer"], []]);
  });
});

describe("followUp and nextRun at run boundaries", () => {
  it("a followUp is taken only when the run may finish, not at the boundary after tool results", async () => {
    const result = await withRig(
      async ({ harness }) => {
        const lane = await harness.lane("main");
        let requests = 0;
        harness.hooks.on("before_request", async () => {
          if (requests++ === 0) expectOk(await lane.followUp("and then?"));
        });
        const record = settledRecord(await lane.prompt("go"));
        return { record, entries: transcript(lane), queue: queued(lane) };
      },
      { ...script, steps: [{ toolCalls: [{ name: "lookup", arguments: {} }] }, { text: "first answer" }, { text: "second answer" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:go", "assistant:call(lookup)", "toolResult:lookup", "assistant:first answer", "user:and then?", "assistant:second answer"]);
    expect(result.queue).toEqual([]);
  });

  it("a nextRun is never taken mid-run: the run finishes and the item stays queued", async () => {
    const result = await withRig(
      async ({ harness }) => {
        const lane = await harness.lane("main");
        let requests = 0;
        harness.hooks.on("before_request", async () => {
          if (requests++ === 0) expectOk(await lane.nextRun("next time"));
        });
        const record = settledRecord(await lane.prompt("go"));
        return { record, entries: transcript(lane), queue: queued(lane), requests };
      },
      { ...script, steps: [{ toolCalls: [{ name: "lookup", arguments: {} }] }, { text: "done" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.requests).toBe(2);
    expect(result.entries).toEqual(["user:go", "assistant:call(lookup)", "toolResult:lookup", "assistant:done"]);
    expect(result.queue).toEqual(["nextRun:next time"]);
  });
});

describe("finish mediation: before_run_end (§3.6 step 4)", () => {
  it("a follow-up from the hook is inserted as a user message and the run takes another turn", async () => {
    const result = await withRig(
      async ({ harness, events }) => {
        const lane = await harness.lane("main");
        const seen: string[][] = [];
        harness.hooks.on("before_run_end", (event) => {
          seen.push(event.messages.map(describeMessage));
          return seen.length === 1 ? { followUp: "one more thing" } : undefined;
        });
        const record = settledRecord(await lane.prompt("go"));
        return { record, seen, entries: transcript(lane), tip: lane.getTipId(), turns: ofType(events, "turn_start").length };
      },
      { ...script, steps: [{ text: "a" }, { text: "b" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:go", "assistant:a", "user:one more thing", "assistant:b"]);
    expect(result.seen).toEqual([
      ["user:go", "assistant:a"],
      ["user:go", "assistant:a", "user:one more thing", "assistant:b"],
    ]);
    expect(result.turns).toBe(2);
    expect(result.record.tipId).toBe(result.tip);
  });

  it("the latest defined follow-up of several handlers wins", async () => {
    const result = await withRig(
      async ({ harness }) => {
        const lane = await harness.lane("main");
        let calls = 0;
        harness.hooks.on("before_run_end", () => (calls++ === 0 ? { followUp: "from the first handler" } : undefined));
        harness.hooks.on("before_run_end", () => (calls === 1 ? { followUp: "from the second handler" } : {}));
        const record = settledRecord(await lane.prompt("go"));
        return { record, entries: transcript(lane) };
      },
      { ...script, steps: [{ text: "a" }, { text: "b" }] },
    );
    expect(result.entries).toEqual(["user:go", "assistant:a", "user:from the second handler", "assistant:b"]);
  });

  it("stale drop: a non-projecting write arriving while the hook awaits drops the follow-up; the run completes with the write placed", async () => {
    const result = await withRig(
      async ({ harness, events }) => {
        const lane = await harness.lane("main");
        let calls = 0;
        let written = "";
        harness.hooks.on("before_run_end", async () => {
          calls++;
          written = expectOk(await lane.appendCustomEntry("audit", { at: "hook" })).entryId;
          return { followUp: "dropped follow-up" };
        });
        const record = settledRecord(await lane.prompt("go"));
        const end = ofType(events, "run_end")[0];
        return { record, calls, written, entries: transcript(lane), tip: lane.getTipId(), queue: queued(lane), end, tail: types(events).slice(-3) };
      },
      { ...script, steps: [{ text: "a" }, { text: "never requested" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.calls).toBe(1);
    expect(result.entries).toEqual(["user:go", "assistant:a", "custom:audit"]);
    expect(result.tip).toBe(result.written);
    expect(result.record.tipId).toBe(result.written);
    expect(result.end?.tipId).toBe(result.written);
    // The planned placement and the terminal are one transaction: placement events, then run_end.
    expect(result.tail).toEqual(["entry_added", "queue_update", "run_end"]);
    expect(result.queue).toEqual([]);
  });

  it("a steer arriving while the hook awaits wins over the hook's follow-up and starts another turn", async () => {
    const result = await withRig(
      async ({ harness }) => {
        const lane = await harness.lane("main");
        let calls = 0;
        harness.hooks.on("before_run_end", async () => {
          if (calls++ > 0) return undefined;
          expectOk(await lane.steer("late steer"));
          return { followUp: "stale follow-up" };
        });
        const record = settledRecord(await lane.prompt("go"));
        return { record, calls, entries: transcript(lane) };
      },
      { ...script, steps: [{ text: "a" }, { text: "b" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.calls).toBe(2);
    expect(result.entries).toEqual(["user:go", "assistant:a", "user:late steer", "assistant:b"]);
  });

  it("queued non-projecting writes planned before the hook are placed with the final completion", async () => {
    const result = await withRig(
      async ({ harness }) => {
        const lane = await harness.lane("main");
        const seen: string[][] = [];
        harness.hooks.on("before_request", async () => void expectOk(await lane.appendCustomEntry("during", null)));
        harness.hooks.on("before_run_end", (event) => void seen.push(event.messages.map(describeMessage)));
        const record = settledRecord(await lane.prompt("go"));
        return { record, seen, entries: transcript(lane) };
      },
      { ...script, steps: [{ text: "a" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:go", "assistant:a", "custom:during"]);
    expect(result.seen).toEqual([["user:go", "assistant:a"]]);
  });

  it("before_run_end is not called when the run fails", async () => {
    const result = await withRig(
      async ({ harness }) => {
        const lane = await harness.lane("main");
        const calls: AgentMessage[][] = [];
        harness.hooks.on("before_run_end", (event) => void calls.push(event.messages));
        const record = settledRecord(await lane.prompt("go"));
        return { record, calls: calls.length, entries: transcript(lane) };
      },
      { ...script, steps: [{ error: "boom", retryable: false }] },
    );
    expect(result.record.status).toBe("failed");
    expect(result.record.error?.code).toBe("assistant_error");
    expect(result.calls).toBe(0);
    expect(result.entries).toHaveLength(2);
  });
});
