import { afterEach, describe, expect, it, vi } from "vitest";
import { AbortRequested, createEffectGate, gatedDelay } from "../../harness/execution/effect-gate.ts";
import { HarnessClosed, HarnessFault } from "../../harness/execution/errors.ts";

// The split effect gate (reference §4.3): both admission orders, close, synchronous invoke, retry timers.

function caught(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

describe("effect gate", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("starts open and admits with its own signal, returning what invoke returns", () => {
    const { gate, control } = createEffectGate();
    expect(control.state).toBe("open");
    let seen: AbortSignal | undefined;
    const value = gate.admit((signal) => {
      seen = signal;
      return 42;
    });
    expect(value).toBe(42);
    expect(seen).toBe(gate.signal);
    expect(gate.signal.aborted).toBe(false);
  });

  it("invokes synchronously, with no yield between the state check and the call", () => {
    const { gate } = createEffectGate();
    const order: string[] = [];
    order.push("before");
    gate.admit(() => order.push("invoke"));
    order.push("after");
    expect(order).toEqual(["before", "invoke", "after"]);
  });

  it("admission first: the effect runs, and a later abort signals its signal", async () => {
    const { gate, control } = createEffectGate();
    let effectSignal: AbortSignal | undefined;
    const effect = gate.admit(
      (signal) =>
        new Promise<string>((_resolve, reject) => {
          effectSignal = signal;
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        }),
    );
    let marker!: () => void;
    control.beginAbort(new Promise<void>((resolve) => (marker = resolve)));
    expect(control.state).toBe("aborting");
    expect(effectSignal?.aborted).toBe(false); // beginAbort closes admission only
    marker(); // the abort marker commits...
    control.signalAbort(); // ...then the live gate is signalled
    expect(effectSignal?.aborted).toBe(true);
    const error = await rejection(effect);
    expect(error).toBeInstanceOf(DOMException);
    expect(error).toMatchObject({ name: "AbortError" });
  });

  it("abort first: admit throws AbortRequested carrying the cancellation, and invoke never runs", async () => {
    const { gate, control } = createEffectGate();
    const cancellation = Promise.resolve();
    control.beginAbort(cancellation);
    const invoke = vi.fn(() => "ran");
    const error = caught(() => gate.admit(invoke));
    expect(error).toBeInstanceOf(AbortRequested);
    expect(error instanceof AbortRequested && error.cancellation).toBe(cancellation);
    expect(invoke).not.toHaveBeenCalled();
    if (error instanceof AbortRequested) await error.cancellation; // wait for the marker, then reconcile
  });

  it("keeps the first cancellation and marks it handled so a failed marker is not unhandled", async () => {
    const { gate, control } = createEffectGate();
    const first = Promise.reject(new HarnessClosed());
    control.beginAbort(first);
    control.beginAbort(Promise.resolve());
    const error = caught(() => gate.admit(() => undefined));
    expect(error instanceof AbortRequested && error.cancellation).toBe(first);
    await expect(first).rejects.toBeInstanceOf(HarnessClosed);
  });

  it("close: every later admit throws the close error; the first close wins; abort cannot reopen", () => {
    const { gate, control } = createEffectGate();
    const closed = new HarnessClosed();
    control.close(closed);
    control.close(new HarnessFault("later"));
    control.beginAbort(Promise.resolve());
    expect(control.state).toBe("closed");
    const invoke = vi.fn();
    expect(caught(() => gate.admit(invoke))).toBe(closed);
    expect(invoke).not.toHaveBeenCalled();
    expect(gate.signal.aborted).toBe(false); // close writes nothing and does not pull admitted effects
  });

  it("close wins over an abort in progress (a fault closes with HarnessFault)", () => {
    const { gate, control } = createEffectGate();
    control.beginAbort(Promise.resolve());
    const fault = new HarnessFault("invariant broken", { code: "no_progress" });
    control.close(fault);
    expect(control.state).toBe("closed");
    const error = caught(() => gate.admit(() => undefined));
    expect(error).toBe(fault);
    expect(error).toMatchObject({ name: "HarnessFault", code: "no_progress" });
  });

  it("signalAbort is idempotent and only affects the signal, not admission", () => {
    const { gate, control } = createEffectGate();
    control.signalAbort();
    control.signalAbort();
    expect(gate.signal.aborted).toBe(true);
    expect(control.state).toBe("open");
  });
});

describe("gatedDelay", () => {
  it("resolves after the timer fires", async () => {
    const { gate } = createEffectGate();
    await expect(gatedDelay(gate, 1)).resolves.toBeUndefined();
  });

  it("creates the timer through the gate: refused admission creates no timer", async () => {
    const { gate, control } = createEffectGate();
    const setTimer = vi.spyOn(globalThis, "setTimeout");
    control.beginAbort(Promise.resolve());
    expect(await rejection(gatedDelay(gate, 10_000))).toBeInstanceOf(AbortRequested);
    const closed = createEffectGate();
    closed.control.close(new HarnessClosed());
    expect(await rejection(gatedDelay(closed.gate, 10_000))).toBeInstanceOf(HarnessClosed);
    expect(setTimer).not.toHaveBeenCalled();
    setTimer.mockRestore();
  });

  it("an abort signalled while waiting rejects with an AbortError and clears the timer", async () => {
    const { gate, control } = createEffectGate();
    const clearTimer = vi.spyOn(globalThis, "clearTimeout");
    const wait = gatedDelay(gate, 60_000);
    await tick();
    control.beginAbort(Promise.resolve());
    control.signalAbort();
    const error = await rejection(wait);
    expect(error).toMatchObject({ name: "AbortError" });
    expect(clearTimer).toHaveBeenCalledTimes(1);
    clearTimer.mockRestore();
  });

  it("rejects at once when admitted under an already-aborted signal", async () => {
    const { gate, control } = createEffectGate();
    control.signalAbort();
    const error = await rejection(gatedDelay(gate, 60_000));
    expect(error).toMatchObject({ name: "AbortError" });
  });
});
