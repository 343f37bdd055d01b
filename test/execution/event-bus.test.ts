import { describe, expect, it } from "vitest";
import { EventBus } from "../../harness/execution/event-bus.ts";
import type { HarnessEvent } from "../../schema/lane.ts";

// The event bus ordering contract (reference §5.2): recipients bound at emitBatch, one global delivery
// tail in emit order, a structured clone per recipient, failure isolation, and close.

const runStart = (runId: string): HarnessEvent => ({ type: "run_start", lane: "main", runId, startedAt: 1 });
const runResume = (runId: string): HarnessEvent => ({ type: "run_resume", lane: "main", runId });
const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

function describeEvent(event: HarnessEvent): string {
  return "runId" in event ? `${event.type}:${event.runId}` : event.type;
}

describe("event bus", () => {
  it("delivers by type and to '*' listeners, never synchronously inside emitBatch", async () => {
    const bus = new EventBus();
    const seen: string[] = [];
    bus.on("run_start", (event) => {
      seen.push(`typed:${event.runId}:${event.startedAt}`);
    });
    bus.on("*", (event) => {
      seen.push(`all:${describeEvent(event)}`);
    });
    const delivered = bus.emitBatch([runStart("a"), runResume("a")]);
    expect(seen).toEqual([]);
    await delivered;
    expect(seen).toEqual(["typed:a:1", "all:run_start:a", "all:run_resume:a"]);
  });

  it("binds recipients at emit: later listeners miss the batch, listeners removed later still get it", async () => {
    const bus = new EventBus();
    const seen: string[] = [];
    const offEarly = bus.on("*", (event) => {
      seen.push(`early:${describeEvent(event)}`);
    });
    const first = bus.emitBatch([runStart("a")]);
    offEarly();
    bus.on("*", (event) => {
      seen.push(`late:${describeEvent(event)}`);
    });
    const second = bus.emitBatch([runStart("b")]);
    await Promise.all([first, second]);
    expect(seen).toEqual(["early:run_start:a", "late:run_start:b"]);
  });

  it("serializes batches on one tail: a slow async listener delays later batches, never interleaving", async () => {
    const bus = new EventBus();
    const seen: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    bus.on("*", async (event) => {
      seen.push(`slow-start:${describeEvent(event)}`);
      if (describeEvent(event) === "run_start:a") await gate;
      seen.push(`slow-end:${describeEvent(event)}`);
    });
    bus.on("*", (event) => {
      seen.push(`fast:${describeEvent(event)}`);
    });
    const first = bus.emitBatch([runStart("a"), runResume("a")]);
    let secondDone = false;
    const second = bus.emitBatch([runStart("b")]).then(() => {
      secondDone = true;
    });
    await tick();
    expect(seen).toEqual(["slow-start:run_start:a"]);
    expect(secondDone).toBe(false);
    release();
    await first;
    expect(secondDone).toBe(false);
    await second;
    expect(seen).toEqual([
      "slow-start:run_start:a",
      "slow-end:run_start:a",
      "fast:run_start:a",
      "slow-start:run_resume:a",
      "slow-end:run_resume:a",
      "fast:run_resume:a",
      "slow-start:run_start:b",
      "slow-end:run_start:b",
      "fast:run_start:b",
    ]);
  });

  it("gives each recipient its own structured clone", async () => {
    const bus = new EventBus();
    const original: HarnessEvent = {
      type: "operation_abort",
      lane: "main",
      operationId: "op-1",
      steer: [{ role: "user", content: "steer", timestamp: 1 }],
      followUp: [],
    };
    const received: HarnessEvent[] = [];
    bus.on("operation_abort", (event) => {
      received.push(event);
      event.steer.length = 0;
      event.operationId = "mutated";
    });
    bus.on("operation_abort", (event) => {
      received.push(event);
    });
    await bus.emitBatch([original]);
    expect(received[0]).not.toBe(original);
    expect(received[1]).toEqual(original);
    expect(original).toMatchObject({ operationId: "op-1", steer: [{ content: "steer" }] });
  });

  it("isolates listener failures: handler_error goes to the other recipients, delivery continues", async () => {
    const bus = new EventBus();
    const seen: string[] = [];
    const errors: HarnessEvent[] = [];
    bus.on("run_start", () => {
      throw new Error("listener broke");
    });
    bus.on("run_start", async () => {
      await Promise.resolve();
      throw new Error("async listener broke");
    });
    bus.on("*", (event) => {
      if (event.type === "handler_error") errors.push(event);
      else seen.push(describeEvent(event));
    });
    bus.on("handler_error", () => {
      throw new Error("a failing error listener is not reported again");
    });
    await expect(bus.emitBatch([runStart("a"), runResume("a")])).resolves.toBeUndefined();
    expect(seen).toEqual(["run_start:a", "run_resume:a"]);
    expect(errors).toEqual([
      { type: "handler_error", kind: "event", error: "listener broke", lane: "main" },
      { type: "handler_error", kind: "event", error: "async listener broke", lane: "main" },
    ]);
    await bus.emitBatch([runStart("b")]);
    expect(seen).toEqual(["run_start:a", "run_resume:a", "run_start:b"]);
  });

  it("reports failures on session events without a lane", async () => {
    const bus = new EventBus();
    const errors: HarnessEvent[] = [];
    bus.on("value_update", () => {
      throw new Error("no lane here");
    });
    bus.on("handler_error", (event) => {
      errors.push(event);
    });
    await bus.emitBatch([{ type: "value_update", value: "session_name", name: "renamed" }]);
    expect(errors).toEqual([{ type: "handler_error", kind: "event", error: "no lane here" }]);
  });

  it("close drains batches bound before it; later emits are no-ops that resolve at once", async () => {
    const bus = new EventBus();
    const seen: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    bus.on("*", async (event) => {
      await gate;
      seen.push(describeEvent(event));
    });
    void bus.emitBatch([runStart("a")]);
    let drained = false;
    const closing = bus.close().then(() => {
      drained = true;
    });
    expect(bus.isClosed).toBe(true);
    await bus.emitBatch([runStart("after-close")]);
    await tick();
    expect(drained).toBe(false);
    release();
    await closing;
    expect(seen).toEqual(["run_start:a"]);
  });

  it("an empty batch resolves once everything emitted before it has been delivered", async () => {
    const bus = new EventBus();
    const seen: string[] = [];
    bus.on("*", async (event) => {
      await tick();
      seen.push(describeEvent(event));
    });
    void bus.emitBatch([runStart("a")]);
    void bus.emitBatch([runStart("b")]);
    await bus.emitBatch([]);
    expect(seen).toEqual(["run_start:a", "run_start:b"]);
  });
});
