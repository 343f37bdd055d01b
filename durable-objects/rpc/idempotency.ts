import { ERROR_STATUS, type ApiError } from "../../schema/errors.ts";

/** Remembered responses of creating POSTs (ARCHITECTURE D15), kept for 24 hours. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * The largest answer remembered for a replay, in UTF-8 bytes. A remembered answer is one SQLite
 * row, and a row holds at most 2 MB (reference §5: SQLITE_TOOBIG beyond), key and hash included;
 * a larger answer is remembered as the small IdempotencyReplayTooLarge refusal instead.
 */
export const IDEMPOTENCY_REPLAY_MAX_BYTES = 1024 * 1024;
/** A claim older than this without a response is taken over (its request died mid-way). */
export const IDEMPOTENCY_CLAIM_MS = 60 * 1000;

export type IdempotencyClaim =
  | { state: "claimed" }
  | { state: "replay"; status: number; body: string }
  | { state: "conflict" }
  | { state: "in_progress"; retryAfterSeconds: number };

/** The answer a repeat of a request gets. */
export interface IdempotencyReplay {
  status: number;
  body: string;
}

type Row = { request_hash: string; status: number | null; body: string | null; created_at: number };

/**
 * The owning object's idempotency table. `claim` and `complete` are each one synchronous SQL turn,
 * so two requests with one key cannot both claim it. Keys arrive scoped by the caller (the route
 * and the object's tenant), so one key used on two routes names two records.
 */
export class IdempotencyStore {
  constructor(private readonly sql: SqlStorage) {}

  claim(key: string, requestHash: string, now = Date.now()): IdempotencyClaim {
    this.sql.exec("DELETE FROM idempotency WHERE created_at < ?", now - IDEMPOTENCY_TTL_MS);
    const row = this.sql.exec<Row>("SELECT request_hash, status, body, created_at FROM idempotency WHERE key = ?", key).toArray()[0];
    if (row) {
      if (row.request_hash !== requestHash) return { state: "conflict" };
      if (row.status !== null && row.body !== null) return { state: "replay", status: row.status, body: row.body };
      const held = row.created_at + IDEMPOTENCY_CLAIM_MS - now;
      if (held > 0) return { state: "in_progress", retryAfterSeconds: Math.max(1, Math.ceil(held / 1000)) };
    }
    this.sql.exec(
      `INSERT INTO idempotency (key, request_hash, status, body, created_at) VALUES (?, ?, NULL, NULL, ?)
       ON CONFLICT (key) DO UPDATE SET request_hash = excluded.request_hash, status = NULL, body = NULL, created_at = excluded.created_at`,
      key,
      requestHash,
      now,
    );
    return { state: "claimed" };
  }

  /**
   * Records what a repeat of the request answers (`replay`), or releases the claim (`null`): the
   * caller remembers successes only (worker/middleware/idempotency.ts says why).
   */
  complete(key: string, requestHash: string, replay: IdempotencyReplay | null): void {
    if (replay === null) {
      this.sql.exec("DELETE FROM idempotency WHERE key = ? AND request_hash = ?", key, requestHash);
      return;
    }
    const remembered = replayWithinBound(replay);
    this.sql.exec("UPDATE idempotency SET status = ?, body = ? WHERE key = ? AND request_hash = ?", remembered.status, remembered.body, key, requestHash);
  }
}

/** Top-level fields of an answer that name what its request created, copied into the refusal. */
const CREATED_IDS = ["id", "operationId", "entryId", "keyId"] as const;

const encoder = new TextEncoder();

/**
 * `replay` when it fits IDEMPOTENCY_REPLAY_MAX_BYTES, else what a repeat answers instead: 409
 * IdempotencyReplayTooLarge with the first answer's status, its size and the ids it names (the
 * request ran once and is not run again). Like the refusal a key creation remembers instead of
 * its secret (KeySecretNotReplayed), it is remembered as the replay itself; it is small, so this
 * function leaves it as it is.
 */
export function replayWithinBound(replay: IdempotencyReplay): IdempotencyReplay {
  const bytes = replay.body.length * 3 <= IDEMPOTENCY_REPLAY_MAX_BYTES ? replay.body.length : encoder.encode(replay.body).byteLength;
  if (bytes <= IDEMPOTENCY_REPLAY_MAX_BYTES) return replay;
  const created = createdIds(replay.body);
  const named = Object.entries(created).map(([field, id]) => `${field} ${id}`).join(", ");
  const error: ApiError = {
    code: "IdempotencyReplayTooLarge",
    message:
      `The first request with this Idempotency-Key succeeded (status ${replay.status}${named && `; ${named}`}), but its answer of ${bytes} bytes ` +
      `is larger than the ${IDEMPOTENCY_REPLAY_MAX_BYTES} bytes remembered for a replay. It is not run again; read what it created instead.`,
    details: { status: replay.status, bytes, limit: IDEMPOTENCY_REPLAY_MAX_BYTES, ...created },
  };
  return { status: ERROR_STATUS.IdempotencyReplayTooLarge, body: JSON.stringify({ error }) };
}

function createdIds(body: string): Partial<Record<(typeof CREATED_IDS)[number], string>> {
  let answer: unknown;
  try {
    answer = JSON.parse(body);
  } catch {
    return {};
  }
  if (typeof answer !== "object" || answer === null || Array.isArray(answer)) return {};
  const ids: Partial<Record<(typeof CREATED_IDS)[number], string>> = {};
  for (const field of CREATED_IDS) {
    const id: unknown = Reflect.get(answer, field);
    if (typeof id === "string") ids[field] = id;
  }
  return ids;
}
