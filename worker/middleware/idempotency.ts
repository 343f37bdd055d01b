import { createMiddleware } from "hono/factory";
import { sha256Hex } from "../../durable-objects/tenant-object.ts";
import type { IdempotencyClaim } from "../../durable-objects/idempotency.ts";
import type { AppContext, AppEnv } from "../env.ts";
import { fail } from "../http-error.ts";

/** The object that owns a creating POST's Idempotency-Key (ARCHITECTURE D15). */
export interface IdempotencyOwner {
  idempotencyClaim(key: string, requestHash: string): Promise<IdempotencyClaim | { state: "no_session" }>;
  idempotencyComplete(key: string, requestHash: string, status: number, body: string): Promise<void>;
}

/** The form of an `Idempotency-Key` header (also published in /openapi.json). */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * `Idempotency-Key` on a creating POST: the same key and body replay the remembered response
 * (one effect), the same key with another body is 422, a concurrent duplicate is 409. Without the
 * header the request runs normally.
 */
export function idempotent(owner: (c: AppContext) => IdempotencyOwner) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const key = c.req.header("idempotency-key");
    if (key === undefined) return next();
    if (!IDEMPOTENCY_KEY.test(key)) throw fail("ValidationFailed", "Idempotency-Key must be 1–255 printable ASCII characters");
    const body = await c.req.text();
    const requestHash = await sha256Hex(`${c.req.method} ${new URL(c.req.url).pathname}\n${body}`);
    const store = owner(c);
    const claim = await store.idempotencyClaim(key, requestHash);
    switch (claim.state) {
      case "no_session":
        throw fail("SessionNotFound", "Session not found");
      case "conflict":
        throw fail("IdempotencyConflict", "This Idempotency-Key was used with a different request");
      case "in_progress":
        throw fail("IdempotencyInProgress", "A request with this Idempotency-Key is still running");
      case "replay":
        return new Response(claim.body, {
          status: claim.status,
          headers: { "content-type": "application/json", "idempotency-replayed": "true" },
        });
      case "claimed":
        break;
    }
    await next();
    await store.idempotencyComplete(key, requestHash, c.res.status, await c.res.clone().text());
  });
}
