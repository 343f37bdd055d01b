import type { KeyInfo } from "../../schema/api.ts";
import type { ApiError } from "../../schema/errors.ts";
import { RpcError } from "../rpc/rpc-errors.ts";
import { decodeTimeCursor, timePage, type Page } from "./time-cursor.ts";

/** `lastUsedAt` is recorded at most this often per key: a request does not cost a write of its own. */
export const LAST_USED_GRANULARITY_MS = 60_000;

export type { KeyInfo };

/** What a repeated key creation answers: the key exists, its secret was shown once and is not stored. */
export function keySecretNotReplayed(keyId: string): ApiError {
  return {
    code: "KeySecretNotReplayed",
    message: `Key ${keyId} was created by the first request with this Idempotency-Key; its secret was shown once and is not stored. Revoke the key if the secret was lost.`,
    details: { keyId },
  };
}

type KeyRow = { key_id: string; hash: string; name: string; created_at: number; revoked_at: number | null; last_used_at: number | null };

const encoder = new TextEncoder();

/**
 * The TenantObject's API keys (ARCHITECTURE D17): SHA-256 hashes compared in constant time,
 * immediate revocation (every request reads the row), and a coarse "last used" time. Every method
 * is one synchronous SQL turn.
 */
export class TenantKeys {
  constructor(private readonly sql: SqlStorage) {}

  insert(keyId: string, hash: string, name: string, now: number): void {
    this.sql.exec("INSERT INTO api_keys (key_id, hash, name, created_at) VALUES (?, ?, ?, ?)", keyId, hash, name, now);
  }

  has(keyId: string): boolean {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM api_keys WHERE key_id = ?", keyId).one().n > 0;
  }

  revoke(keyId: string, now: number): void {
    const row = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM api_keys WHERE key_id = ?", keyId).one();
    if (row.n === 0) throw new RpcError({ code: "NotFound", message: `Key ${keyId} does not exist` });
    this.sql.exec("UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE key_id = ?", now, keyId);
  }

  /**
   * The key id of a live key with this hash, or null (unknown or revoked). A match records the
   * use when the recorded one is older than the granularity: at most one write a minute per key.
   */
  use(hash: string, now: number): { keyId: string } | null {
    const row = this.sql.exec<KeyRow>("SELECT key_id, hash, name, created_at, revoked_at, last_used_at FROM api_keys WHERE hash = ?", hash).toArray()[0];
    if (!row || row.revoked_at !== null) return null;
    const a = encoder.encode(row.hash);
    const b = encoder.encode(hash);
    if (a.byteLength !== b.byteLength || !crypto.subtle.timingSafeEqual(a, b)) return null;
    if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_GRANULARITY_MS) {
      this.sql.exec("UPDATE api_keys SET last_used_at = ? WHERE key_id = ?", now, row.key_id);
    }
    return { keyId: row.key_id };
  }

  /** Keys in creation order, revoked ones included (with `revokedAt`), a page at a time. */
  list(limit: number, cursor: string | undefined): Page<KeyInfo> {
    const after = decodeTimeCursor("key", cursor);
    const rows = this.sql
      .exec<KeyRow>(
        `SELECT key_id, hash, name, created_at, revoked_at, last_used_at FROM api_keys
         WHERE (created_at, key_id) > (?, ?) ORDER BY created_at, key_id LIMIT ?`,
        after.at,
        after.id,
        limit + 1,
      )
      .toArray();
    return timePage("key", rows, limit, (row) => row.created_at, (row) => row.key_id, (row) => ({
      keyId: row.key_id,
      name: row.name,
      createdAt: row.created_at,
      ...(row.last_used_at !== null && { lastUsedAt: row.last_used_at }),
      ...(row.revoked_at !== null && { revokedAt: row.revoked_at }),
    }));
  }
}

/** The hash a key is stored and looked up by: the front worker hashes each presented key with it. */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}
