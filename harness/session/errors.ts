// Errors of the session layer. Expected outcomes of user input are tagged values at the API edge;
// these are thrown because they mean misuse, a closed session, or corrupt durable state.

/** Durable state contradicts an invariant (duplicate id, missing parent, partial lane). A fault. */
export class StorageCorruption extends Error {
  override readonly name = "StorageCorruption";
}

/** A payload would exceed the per-entry/value size ceiling; refused before anything is written. */
export class PayloadTooLarge extends Error {
  override readonly name = "PayloadTooLarge";
  constructor(
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`Payload of ${bytes} bytes exceeds the ${limit}-byte limit`);
  }
}

export class StorageClosed extends Error {
  override readonly name = "StorageClosed";
  constructor() {
    super("The session storage is closed");
  }
}

/** The session was closed (or faulted); its mutation line admits nothing more. */
export class SessionClosed extends Error {
  override readonly name = "SessionClosed";
  constructor(message = "The session is closed") {
    super(message);
  }
}

/** A second commit through one mutation capability, or use after end(). A programming defect. */
export class MutationMisuse extends Error {
  override readonly name = "MutationMisuse";
}

/** Expected failures of Session/Branch calls: each rejects the call and writes nothing. */
export type InvalidBranchReason = "empty" | "nul" | "too_long";
export class InvalidBranch extends Error {
  override readonly name = "InvalidBranch";
  constructor(
    readonly branch: string,
    readonly reason: InvalidBranchReason,
  ) {
    super(`Invalid branch name (${reason})`);
  }
}
export class BranchExists extends Error {
  override readonly name = "BranchExists";
  constructor(readonly branch: string) {
    super(`Branch "${branch}" already exists`);
  }
}
export class UnknownTarget extends Error {
  override readonly name = "UnknownTarget";
  constructor(readonly targetId: string) {
    super(`Entry ${targetId} does not exist`);
  }
}
export class UnknownBranch extends Error {
  override readonly name = "UnknownBranch";
  constructor(readonly branch: string) {
    super(`Branch "${branch}" does not exist`);
  }
}
export type InvalidMessageReason = "empty" | "pending_assistant" | "images_with_non_user";
export class InvalidMessage extends Error {
  override readonly name = "InvalidMessage";
  constructor(readonly reason: InvalidMessageReason) {
    super(`Invalid message (${reason})`);
  }
}
