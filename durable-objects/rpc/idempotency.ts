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

type Row = { request_hash: string; status: number | null; body: string | null; created_at: number; released: number };

/** The claimed key of one request, as the object that makes its effect receives it. */
export interface ReceiptScope {
  key: string;
  requestHash: string;
}

/**
 * The owning object's idempotency table. `claim` and `complete` are each one synchronous SQL turn,
 * so two requests with one key cannot both claim it. Keys arrive scoped by the caller (the route
 * and the object's tenant), so one key used on two routes names two records.
 *
 * A claim and its remembered answer are two steps with the effect between them, so a crash after
 * the effect and before the answer leaves a claim without an answer; once it lapses
 * (IDEMPOTENCY_CLAIM_MS) the request runs again. What keeps that from making the effect twice is
 * the effect receipt (`once`): the object that makes the effect records what it answered in the
 * same storage batch as the effect, and the repeat answers that instead of making it again.
 */
export class IdempotencyStore {
  constructor(private readonly sql: SqlStorage) {}

  claim(key: string, requestHash: string, now = Date.now()): IdempotencyClaim {
    this.sql.exec("DELETE FROM idempotency WHERE created_at < ?", now - IDEMPOTENCY_TTL_MS);
    const row = this.sql.exec<Row>("SELECT request_hash, status, body, created_at, released FROM idempotency WHERE key = ?", key).toArray()[0];
    if (row) {
      if (row.request_hash !== requestHash) return { state: "conflict" };
      if (row.status !== null && row.body !== null) return { state: "replay", status: row.status, body: row.body };
      const held = row.created_at + IDEMPOTENCY_CLAIM_MS - now;
      if (held > 0 && row.released === 0) return { state: "in_progress", retryAfterSeconds: Math.max(1, Math.ceil(held / 1000)) };
    }
    // A claim taken over keeps its effect receipt: the request it repeats may have made its effect.
    this.sql.exec(
      `INSERT INTO idempotency (key, request_hash, status, body, created_at) VALUES (?, ?, NULL, NULL, ?)
       ON CONFLICT (key) DO UPDATE SET status = NULL, body = NULL, released = 0, created_at = excluded.created_at`,
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
      // A claim with an effect on record is given back, not forgotten: its retry must find the effect.
      this.sql.exec("DELETE FROM idempotency WHERE key = ? AND request_hash = ? AND effect IS NULL", key, requestHash);
      this.sql.exec("UPDATE idempotency SET released = 1 WHERE key = ? AND request_hash = ?", key, requestHash);
      return;
    }
    const remembered = replayWithinBound(replay);
    this.sql.exec("UPDATE idempotency SET status = ?, body = ? WHERE key = ? AND request_hash = ?", remembered.status, remembered.body, key, requestHash);
  }
}

/**
 * Makes a request's effect at most once per claimed key (`scope`; none: the request carried no
 * key, and the effect is simply made). A receipt on record answers its value again; otherwise the
 * effect runs and its value is recorded. The caller must reach here with no awaited I/O other than
 * storage between the effect's own commit and this function's return (an effect that commits and
 * returns): writes separated only by microtasks are one atomic batch of the object's storage
 * (ARCHITECTURE D15 and the platform's write coalescing), so a crash keeps both or neither.
 * Only an effect that resolves is recorded; one that throws made nothing to repeat.
 */
export async function once<T>(sql: SqlStorage, scope: ReceiptScope | undefined, effect: () => Promise<T>): Promise<T> {
  if (scope === undefined) return effect();
  const recorded = sql.exec<{ effect: string | null }>("SELECT effect FROM idempotency WHERE key = ? AND request_hash = ?", scope.key, scope.requestHash).toArray()[0]?.effect;
  if (recorded !== null && recorded !== undefined) {
    const value: T = JSON.parse(recorded);
    return value;
  }
  const value = await effect();
  sql.exec("UPDATE idempotency SET effect = ? WHERE key = ? AND request_hash = ?", JSON.stringify(value ?? null), scope.key, scope.requestHash);
  return value;
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
