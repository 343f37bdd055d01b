import type { HarnessClosed, HarnessFault } from "./errors.ts";

// The split effect gate of one Drive (reference §4.3). Procedures hold the `Gate` half and admit each
// external effect through it; the Drive privately holds `GateControl`. The gate is neither durable nor a
// mutex: it only decides, synchronously, whether an effect may start in this process.
//
// Admission catalog (nothing else calls `admit`): each whole hook pipeline; one assistant
// `Models.streamSimple`; each nested structural-summary request; one `Models.streamDeferred` poll; one
// real `tool.execute`; the creation of each retry timer (`gatedDelay`). Commits, queue/config writes,
// synthetic settlements, classification, reconciliation and listeners are never gated.

export type GateState = "open" | "aborting" | "closed";

/** What closes a gate: the production contract of reference §13.5 (HarnessClosed or HarnessFault), not any Error. */
export type GateCloseError = HarnessClosed | HarnessFault;

/**
 * Thrown by `admit` once an abort has begun: the effect did not start. The procedure awaits
 * `cancellation` (the abort marker's commit) and returns `continue`, so the loop reconciles.
 */
export class AbortRequested extends Error {
  override readonly name = "AbortRequested";
  constructor(readonly cancellation: Promise<void>) {
    super("An abort was requested; the effect was not admitted");
  }
}

export interface Gate {
  /** The signal handed to admitted effects; aborted by `GateControl.signalAbort`. */
  readonly signal: AbortSignal;
  /** Aborted (with the close error) when the gate closes: the Drive's close-only signal (reference §4.1). */
  readonly closeSignal: AbortSignal;
  /**
   * Checks the state and then synchronously calls `invoke(signal)` with no yield in between. All
   * preparation belongs before `admit`; asynchronous work started by `invoke` belongs to the admission.
   * Throws `AbortRequested` while aborting and the close error once closed; `invoke` then never runs.
   */
  admit<T>(invoke: (signal: AbortSignal) => T): T;
}

export interface GateControl {
  /** Closes admission synchronously (before the abort marker is queued). The first call wins. */
  beginAbort(cancellation: Promise<void>): void;
  /**
   * The abort begun with `cancellation` committed no marker (its command was refused, or its
   * commit was): admission opens again, so the pass goes on as if no abort had been asked. Only
   * the abort that closed admission reopens it; a closed gate stays closed.
   */
  reopen(cancellation: Promise<void>): void;
  /** Aborts the signal of every admitted effect (after the abort marker committed). Idempotent. */
  signalAbort(): void;
  /** Harness close or fault: every later `admit` throws `error`. The first call wins. */
  close(error: GateCloseError): void;
  readonly state: GateState;
}

type InternalState =
  | { at: "open" }
  | { at: "aborting"; cancellation: Promise<void> }
  | { at: "closed"; error: GateCloseError };

export function createEffectGate(): { gate: Gate; control: GateControl } {
  const controller = new AbortController();
  const closer = new AbortController();
  let state: InternalState = { at: "open" };

  const gate: Gate = {
    signal: controller.signal,
    closeSignal: closer.signal,
    admit<T>(invoke: (signal: AbortSignal) => T): T {
      if (state.at === "aborting") throw new AbortRequested(state.cancellation);
      if (state.at === "closed") throw state.error;
      return invoke(controller.signal);
    },
  };

  const control: GateControl = {
    beginAbort(cancellation: Promise<void>): void {
      if (state.at !== "open") return;
      // Whoever is refused admission awaits this; if nobody is, a failed marker commit must not
      // surface as an unhandled rejection (the failure reaches the requester through its own call).
      cancellation.catch(() => undefined);
      state = { at: "aborting", cancellation };
    },
    reopen(cancellation: Promise<void>): void {
      if (state.at === "aborting" && state.cancellation === cancellation) state = { at: "open" };
    },
    signalAbort(): void {
      if (!controller.signal.aborted) controller.abort(abortError());
    },
    close(error: GateCloseError): void {
      if (state.at === "closed") return;
      state = { at: "closed", error };
      closer.abort(error);
    },
    get state(): GateState {
      return state.at;
    },
  };

  return { gate, control };
}

/** The rejection of an effect whose signal aborted: the signal's reason, else a standard AbortError. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? abortError();
}

function abortError(): DOMException {
  return new DOMException("The operation was aborted", "AbortError");
}

/**
 * A retry wait whose timer is created through the gate (one catalog item). Refused admission rejects
 * with `AbortRequested` or the close error without creating a timer; an abort signalled while waiting
 * clears the timer and rejects with the signal's abort reason; closing the gate while waiting clears
 * it and rejects with the close error (close rejects the local wait, writing nothing: §3.10).
 */
export async function gatedDelay(gate: Gate, ms: number): Promise<void> {
  return gate.admit(
    (signal) =>
      new Promise<void>((resolve, reject) => {
        if (signal.aborted) {
          reject(abortReason(signal));
          return;
        }
        const stop = (reason: unknown): void => {
          clearTimeout(timer);
          signal.removeEventListener("abort", onAbort);
          gate.closeSignal.removeEventListener("abort", onClose);
          reject(reason);
        };
        const onAbort = (): void => stop(abortReason(signal));
        const onClose = (): void => stop(gate.closeSignal.reason);
        const timer = setTimeout(() => {
          signal.removeEventListener("abort", onAbort);
          gate.closeSignal.removeEventListener("abort", onClose);
          resolve();
        }, Math.max(0, ms));
        signal.addEventListener("abort", onAbort, { once: true });
        gate.closeSignal.addEventListener("abort", onClose, { once: true });
      }),
  );
}
