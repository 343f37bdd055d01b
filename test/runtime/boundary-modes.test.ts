import { describe, expect, it } from "vitest";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { AgentHarness } from "../../harness/runtime/harness.ts";
import { SCRIPT, withRig } from "./helpers.ts";
import { HarnessClosed } from "../../harness/execution/errors.ts";
import { describeMessage, expectOk, ofType, queueOf, queued, settledRecord, transcript, withObject } from "./queue-helpers.ts";

// Boundary selection (reference §3.6 step 2, §3.7): global inbox order, tag eligibility and queue
// modes at the checkpoint. Input is enqueued from the first request's before_request hook, so it is
// queued while the first assistant turn runs.

const script = { model: SCRIPT };

function duringFirstRequest(harness: AgentHarness, enqueue: () => Promise<void>): void {
  let requests = 0;
  harness.hooks.on("before_request", async () => {
    if (requests++ === 0) await enqueue();
  });
}

function recordContexts(harness: AgentHarness): string[][] {
  const contexts: string[][] = [];
  harness.hooks.on("transform_context", (event) => void contexts.push(event.messages.map(describeMessage)));
  return contexts;
}

async function run(lane: AgentLane) {
  return settledRecord(await lane.prompt("go"));
}

describe("boundary selection", () => {
  it("places write and steer items in global inbox order; the write is not projected into the next request", async () => {
    const result = await withRig(
      async ({ harness }) => {
        const lane = await harness.lane("main");
        const contexts = recordContexts(harness);
        duringFirstRequest(harness, async () => {
          expectOk(await lane.steer("steer one"));
          expectOk(await lane.appendCustomEntry("marker", { between: true }));
          expectOk(await lane.steer("steer two"));
        });
        const record = await run(lane);
        return { record, entries: transcript(lane), contexts };
      },
      { ...script, steps: [{ text: "a" }, { text: "b" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:go", "assistant:a", "user:steer one", "custom:marker", "user:steer two", "assistant:b"]);
    expect(result.contexts[1]).toEqual(["user:go", "assistant:a", "user:steer one", "user:steer two"]);
  });

  it("at may_finish a placed steer defers queued followUps to the next finish", async () => {
    const result = await withRig(
      async ({ harness, events }) => {
        const lane = await harness.lane("main");
        duringFirstRequest(harness, async () => {
          expectOk(await lane.followUp("follow"));
          expectOk(await lane.steer("steer"));
        });
        const record = await run(lane);
        return { record, entries: transcript(lane), updates: ofType(events, "queue_update").map(queueOf) };
      },
      { ...script, steps: [{ text: "a" }, { text: "b" }, { text: "c" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:go", "assistant:a", "user:steer", "assistant:b", "user:follow", "assistant:c"]);
    expect(result.updates).toEqual([["followUp:follow"], ["followUp:follow", "steer:steer"], ["followUp:follow"], []]);
  });

  it("at may_finish with nothing projecting, writes and followUps are placed together in inbox order", async () => {
    const result = await withRig(
      async ({ harness }) => {
        const lane = await harness.lane("main");
        duringFirstRequest(harness, async () => {
          expectOk(await lane.appendCustomEntry("log", null));
          expectOk(await lane.followUp("follow"));
          expectOk(await lane.nextRun("later"));
        });
        const record = await run(lane);
        return { record, entries: transcript(lane), queue: queued(lane) };
      },
      { ...script, steps: [{ text: "a" }, { text: "b" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:go", "assistant:a", "custom:log", "user:follow", "assistant:b"]);
    expect(result.queue).toEqual(["nextRun:later"]);
  });

  it("one-at-a-time followUps: one followUp per run end", async () => {
    const result = await withRig(
      async ({ harness }) => {
        await harness.updateSettings({ followUpMode: "one-at-a-time" });
        const lane = await harness.lane("main");
        duringFirstRequest(harness, async () => {
          expectOk(await lane.followUp("follow one"));
          expectOk(await lane.followUp("follow two"));
        });
        const record = await run(lane);
        return { record, entries: transcript(lane), queue: queued(lane) };
      },
      { ...script, steps: [{ text: "a" }, { text: "b" }, { text: "c" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:go", "assistant:a", "user:follow one", "assistant:b", "user:follow two", "assistant:c"]);
    expect(result.queue).toEqual([]);
  });

  it("queue modes are captured at acceptance: a settings change mid-run does not alter that run's cadence", async () => {
    const result = await withRig(
      async ({ harness }) => {
        const lane = await harness.lane("main");
        duringFirstRequest(harness, async () => {
          await harness.updateSettings({ steeringMode: "one-at-a-time" });
          expectOk(await lane.steer("s1"));
          expectOk(await lane.steer("s2"));
        });
        const record = await run(lane);
        return { record, entries: transcript(lane) };
      },
      { ...script, steps: [{ text: "a" }, { text: "b" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:go", "assistant:a", "user:s1", "user:s2", "assistant:b"]);
  });
});

describe("finish mediation with planned writes", () => {
  it("an unchanged plan places its writes and then the hook's follow-up, and the run takes another turn", async () => {
    const result = await withRig(
      async ({ harness, events }) => {
        const lane = await harness.lane("main");
        duringFirstRequest(harness, async () => void expectOk(await lane.appendCustomEntry("audit", null)));
        let calls = 0;
        harness.hooks.on("before_run_end", () => (calls++ === 0 ? { followUp: "and more" } : undefined));
        const record = await run(lane);
        const added = ofType(events, "entry_added").map((event) => event.entry.type === "custom" ? "custom" : event.entry.type === "message" ? event.entry.message.role : "");
        return { record, calls, entries: transcript(lane), added, queue: queued(lane) };
      },
      { ...script, steps: [{ text: "a" }, { text: "b" }] },
    );
    expect(result.record.status).toBe("completed");
    expect(result.calls).toBe(2);
    expect(result.entries).toEqual(["user:go", "assistant:a", "custom:audit", "user:and more", "assistant:b"]);
    expect(result.added).toEqual(["user", "assistant", "custom", "user", "assistant"]);
    expect(result.queue).toEqual([]);
  });
});

describe("finish mediation across a close", () => {
  it("a close while before_run_end awaits commits nothing: after re-attaching the decision replays and the hook runs again", async () => {
    const result = await withObject(
      async (first, reopen) => {
        const lane = await first.harness.lane("main");
        let release!: () => void;
        const held = new Promise<void>((resolve) => (release = resolve));
        let entered!: () => void;
        const inHook = new Promise<void>((resolve) => (entered = resolve));
        first.harness.hooks.on("before_run_end", async () => {
          expectOk(await lane.appendCustomEntry("audit", null));
          entered();
          await held;
          return { followUp: "never placed" };
        });
        const admission = expectOk(await lane.accept({ kind: "prompt", prompt: "go" }));
        const driven = lane.drive({ operationId: admission.operationId, waitForRetry: true }).catch((error: unknown) => error);
        await inHook;
        const closing = first.harness.close();
        release();
        await closing;
        const firstOutcome = await driven;

        const second = await reopen();
        const hookCalls: string[][] = [];
        second.harness.hooks.on("before_run_end", (event) => void hookCalls.push(event.messages.map(describeMessage)));
        const restored = await second.harness.lane("main");
        const reopened = { at: restored.inspectExecution().current?.at, entries: transcript(restored), queue: queued(restored) };
        const record = settledRecord(await restored.drive({ operationId: admission.operationId, waitForRetry: true }));
        return { firstOutcome, open: second.open, reopened, hookCalls, record, entries: transcript(restored), queue: queued(restored) };
      },
      { ...script, steps: [{ text: "a" }, { text: "unused" }] },
    );
    expect(result.firstOutcome).toBeInstanceOf(HarnessClosed);
    expect(result.open).toHaveLength(1);
    expect(result.reopened).toEqual({ at: "checkpoint", entries: ["user:go", "assistant:a"], queue: ["write:audit"] });
    expect(result.hookCalls).toEqual([["user:go", "assistant:a"]]);
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:go", "assistant:a", "custom:audit"]);
    expect(result.queue).toEqual([]);
  });
});
