import { describe, expect, it } from "vitest";
import type { AgentMessage } from "../../schema/messages.ts";
import { baseline, crashAt, leafOf, never, parkInHook, settledRecord, type Attached } from "./crash-rig.ts";

// Crash recovery per leaf (reference §4.6, §9.3 Tier A; QUALITY R1): the run is parked at the
// leaf, every object is killed with abortAllDurableObjects(), a fresh object re-attaches and drives
// the same id. Recovery must reach what an uninterrupted run of the same script reaches.

const injected: AgentMessage = { role: "user", content: "injected by before_run", timestamp: 1 };

describe("crash at starting", () => {
  it("reruns before_run after the kill, commits the boundary once and ends as an uninterrupted run", async () => {
    const steps = [{ text: "the answer" }];
    let reran = 0;
    const crashed = await crashAt({
      steps,
      park: parkInHook("before_run"),
      reopen: ({ harness }) => {
        harness.hooks.on("before_run", () => {
          reran++;
          return {};
        });
      },
    });
    expect(crashed.parked?.at).toBe("starting");
    // Acceptance committed; nothing of the run did: the fresh object restores `starting`.
    expect(crashed.restored).toEqual(crashed.parked);
    expect(crashed.open).toMatchObject([{ lane: "main", operationId: crashed.operationId, kind: "run" }]);
    expect(crashed.stepsAtKill).toBe(0);
    expect(reran).toBe(1);
    expect(settledRecord(crashed.driven)).toMatchObject({ operationId: crashed.operationId, status: "completed" });
    expect(crashed.stepsAfter).toBe(1);
    expect(crashed.violations).toEqual([]);
    const reference = await baseline({ steps });
    expect(crashed.shape).toEqual(reference.shape);
    expect(reference.violations).toEqual([]);
  });
});

describe("crash after the start commit (before_run's injection placed, assistant.ready)", () => {
  it("does not rerun before_run (its injection committed with the boundary decision) and continues to the assistant", async () => {
    const steps = [{ text: "after the injection" }];
    let reran = 0;
    const crashed = await crashAt({
      steps,
      park: ({ harness }) => {
        harness.hooks.on("before_run", () => ({ messages: [injected] }));
        let parked = false;
        // Delivery of the start commit's events is awaited by the pass: hold it there.
        harness.events.on("entry_added", (event) => {
          if (event.entry.type !== "message" || event.entry.message.role !== "user" || event.entry.message.content !== injected.content) return;
          parked = true;
          return never();
        });
        return () => parked;
      },
      reopen: ({ harness }) => {
        harness.hooks.on("before_run", () => {
          reran++;
          return { messages: [injected] };
        });
      },
    });
    // The start commit carries the boundary's need_assistant decision: no checkpoint leaf between.
    expect(crashed.parked).toMatchObject({ at: "assistant.ready", nextAttempt: 1 });
    expect(crashed.restored).toEqual(crashed.parked);
    expect(reran).toBe(0);
    expect(settledRecord(crashed.driven).status).toBe("completed");
    expect(crashed.stepsAfter).toBe(1);
    expect(crashed.violations).toEqual([]);
    const reference = await baseline({
      steps,
      prepare: ({ harness }) => {
        harness.hooks.on("before_run", () => ({ messages: [injected] }));
      },
    });
    expect(crashed.shape).toEqual(reference.shape);
    expect(crashed.shape.map((s) => s.text)).toEqual(["go", injected.content, "after the injection"]);
  });
});

describe("crash at checkpoint{may_finish}", () => {
  it("reruns the boundary with nothing consumed: before_run_end runs again and the run completes", async () => {
    const steps = [{ text: "final answer" }];
    let reran = 0;
    const crashed = await crashAt({
      steps,
      park: parkInHook("before_run_end"),
      reopen: ({ harness }) => {
        harness.hooks.on("before_run_end", () => {
          reran++;
          return {};
        });
      },
    });
    expect(crashed.parked).toMatchObject({ at: "checkpoint", continuation: { kind: "may_finish", includeFinalAssistant: true } });
    expect(crashed.restored).toEqual(crashed.parked);
    expect(reran).toBe(1);
    const record = settledRecord(crashed.driven);
    expect(record.status).toBe("completed");
    expect(record.tipId).toBe(crashed.transcript.at(-1)?.id);
    // Never settled twice: one provider request, one usage row, one assistant entry.
    expect(crashed.stepsAtKill).toBe(1);
    expect(crashed.stepsAfter).toBe(1);
    expect(crashed.usageRows).toBe(1);
    expect(crashed.violations).toEqual([]);
    expect(crashed.shape).toEqual((await baseline({ steps })).shape);
  });

  it("keeps queued input across the kill: a followUp admitted while parked is placed by the rerun boundary", async () => {
    const steps = [{ text: "first" }, { text: "second" }];
    const crashed = await crashAt({
      steps,
      park: parkInHook("before_run_end"),
      whileParked: async (_rig, lane) => {
        const queued = await lane.followUp("one more thing");
        const next = await lane.nextRun("for the next run");
        if (!queued.ok || !next.ok) throw new Error("enqueue failed");
      },
    });
    expect(crashed.restored).toEqual(crashed.parked);
    expect(settledRecord(crashed.driven).status).toBe("completed");
    expect(crashed.shape.map((s) => [s.role, s.text])).toEqual([
      ["user", "go"],
      ["assistant", "first"],
      ["user", "one more thing"],
      ["assistant", "second"],
    ]);
    expect(crashed.violations).toEqual([]);
    // The uninterrupted equivalent: the followUp arrives while before_run_end runs (phase (c) replans).
    const reference = await baseline({
      steps,
      prepare: ({ harness }, lane) => {
        let once = false;
        harness.hooks.on("before_run_end", async () => {
          if (once) return {};
          once = true;
          await lane.followUp("one more thing");
          await lane.nextRun("for the next run");
          return {};
        });
      },
    });
    expect(crashed.shape).toEqual(reference.shape);
  });
});

describe("crash while preparing the first request (before the request intent)", () => {
  // With nothing to place the start writes no commit of its own (P2/P3): preparation runs in
  // `starting`, and a kill there restores `starting` (before_run reruns; nothing was consumed).
  // With before_run's injection the start commit enters `assistant.ready` and a kill restores it.
  const cases = [
    { name: "nothing placed", leaf: "starting", prepare: () => {} },
    { name: "an injection placed", leaf: "assistant.ready", prepare: (harness: Attached["harness"]) => harness.hooks.on("before_run", () => ({ messages: [injected] })) },
  ] as const;
  for (const hook of ["transform_context", "before_request"] as const) {
    for (const variant of cases) {
      it(`parked in ${hook} with ${variant.name}: fresh preparation, the intent commits with new ids, one request in all`, async () => {
        const steps = [{ text: "ready answer" }];
        const crashed = await crashAt({
          steps,
          park: ({ harness }, lane) => {
            variant.prepare(harness);
            let entered = false;
            harness.hooks.on(hook, () => {
              entered = true;
              return never();
            });
            return () => entered && leafOf(lane) === variant.leaf;
          },
          reopen: ({ harness }) => void variant.prepare(harness),
        });
        expect(crashed.parked?.at).toBe(variant.leaf);
        expect(crashed.restored).toEqual(crashed.parked);
        expect(crashed.stepsAtKill).toBe(0);
        expect(settledRecord(crashed.driven).status).toBe("completed");
        expect(crashed.stepsAfter).toBe(1);
        expect(crashed.usageRows).toBe(1);
        // The reopened pass started the turn itself (the first pass never reached the intent).
        expect(crashed.events.filter((event) => event.type === "turn_start")).toHaveLength(1);
        expect(crashed.violations).toEqual([]);
        const reference = await baseline({ steps, prepare: ({ harness }) => void variant.prepare(harness) });
        expect(crashed.shape).toEqual(reference.shape);
      });
    }
  }
});
