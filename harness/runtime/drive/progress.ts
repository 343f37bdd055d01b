import { HarnessClosed } from "../../execution/errors.ts";
import { SessionClosed } from "../../session/errors.ts";
import type { Gate } from "../../execution/effect-gate.ts";
import type { Write } from "../../session/storage.ts";
import type { HarnessCore } from "../core.ts";
import type { OperationState } from "../types.ts";
import type { LaneHandle } from "./pass.ts";

/** What a progress writer needs of its pass (a `Pass` is one). */
export interface ProgressSource {
  readonly core: Pick<HarnessCore, "session" | "assertUnfaulted" | "fault">;
  readonly lane: Pick<LaneHandle, "state">;
  readonly operationId: string;
  readonly gate: Pick<Gate, "closeSignal">;
}

/** Whether the effect that writes progress still owns its leaf (checked on the line). */
export type ProgressFence = (state: OperationState) => boolean;

/**
 * The one path for progress writes of an admitted effect: assistant progress frames now, tool
 * checkpoints and invocation memos with tools (reference §4.8, ARCHITECTURE D10). Writes are
 * chained in request order and never awaited one by one (§7.1 step 6); each is its own mutation
 * that re-checks on the line that the operation is still current and the effect still owns its
 * leaf, and writes nothing otherwise — a write that arrives after its settlement (or after the
 * call staged, or after close) is fenced, never blind. `flushed()` is awaited before settlement.
 */
export class ProgressWriter {
  private tail: Promise<void> = Promise.resolve();
  private fencedWrites = 0;
  private requestedWrites = 0;

  constructor(
    private readonly pass: ProgressSource,
    private readonly fence: ProgressFence,
  ) {}

  /** Queues one write behind the earlier ones; its failure surfaces at `flushed()`. */
  write(writes: Write[]): void {
    this.requestedWrites++;
    const { core, lane, operationId, gate } = this.pass;
    const next = this.tail.then(async () => {
      // Once the harness closed (or faulted) no later progress reaches the session (D14.4).
      if (gate.closeSignal.aborted) throw gate.closeSignal.reason;
      const written = await core.session
        .mutate((m) => {
          core.assertUnfaulted();
          const operation = lane.state.operation;
          if (operation?.meta.operationId !== operationId || !this.fence(operation.state)) return false;
          m.commit(writes);
          return true;
        })
        .catch((error: unknown) => {
          throw error instanceof SessionClosed ? new HarnessClosed() : core.fault(error);
        });
      if (!written) this.fencedWrites++;
    });
    // Not unhandled until `flushed()` reports it.
    next.catch(() => undefined);
    this.tail = next;
  }

  /** Resolves once every queued write committed (or was fenced); rejects with the first failure. */
  flushed(): Promise<void> {
    return this.tail;
  }

  /** Whether any write was requested: without one, nothing of this effect's progress is stored. */
  get wroteAny(): boolean {
    return this.requestedWrites > 0;
  }

  /** Writes that were refused by the fence (for tests and diagnostics). */
  get fenced(): number {
    return this.fencedWrites;
  }
}
