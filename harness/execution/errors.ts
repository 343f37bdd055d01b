// Errors of the execution layer (reference §4.3, §4.7, §13.5). These are thrown, not returned: they mean
// the harness can no longer make progress in this process (closed or faulted), or that a hook broke its
// contract. Expected outcomes of user input stay tagged values at the API edge.

/** The harness (or the lane/drive it owns) was closed: a controlled crash that writes nothing. */
export class HarnessClosed extends Error {
  override readonly name = "HarnessClosed";
  constructor(message = "The harness is closed") {
    super(message);
  }
}

/** The harness faulted (an invariant or deterministic callback failed); it admits nothing more. */
export class HarnessFault extends Error {
  override readonly name = "HarnessFault";
  readonly code: string;
  constructor(message: string, options: { code?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code ?? "fault";
  }
}

/** A hook handler returned a result its pipeline rejects; reported as a handler error and ignored. */
export class InvalidHookResult extends Error {
  override readonly name = "InvalidHookResult";
}

/** The message of anything thrown (handler errors carry only this on the wire). */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
