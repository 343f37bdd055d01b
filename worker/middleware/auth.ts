import { createMiddleware } from "hono/factory";
import { sha256Hex, type Authorization } from "../../durable-objects/tenant/tenant-object.ts";
import { tenantStub, type AppContext, type AppEnv, type Caller, type PresentedKey } from "../env.ts";
import { adminTokenProblem } from "../admin-token.ts";
import { fail } from "../http-error.ts";
import { provenKeys, unprovenAllowed, UNPROVEN_RETRY_AFTER_SECONDS, type AuthSubject } from "./auth-limits.ts";

/** `sk_<tenantId>_<43 base64url characters>`: the random tail has a fixed length, so the tenant
 * id (which may itself contain `_`) is read off unambiguously. */
const KEY = /^sk_([A-Za-z0-9_-]{1,64})_([A-Za-z0-9_-]{43})$/;

/** The bearer key from the Authorization header, or from a `bearer.<key>` WebSocket subprotocol. */
export function presentedKey(headers: Headers): string | undefined {
  const authorization = headers.get("authorization");
  if (authorization) {
    const match = /^Bearer\s+(\S+)$/i.exec(authorization);
    return match?.[1];
  }
  const protocols = headers.get("sec-websocket-protocol")?.split(",").map((p) => p.trim()) ?? [];
  return protocols.find((protocol) => protocol.startsWith("bearer."))?.slice("bearer.".length);
}

/**
 * Authenticates a tenant key (ARCHITECTURE D17): shape first, then the failed-authentication limit
 * for keys not yet proven in this isolate (auth-limits.ts; 429 RateLimited with Retry-After,
 * before any object is touched), then the SHA-256 hash against the tenant's object, every request
 * (revocation is immediate), counting the request against the tenant's per-minute quota in the
 * same call (429 RateLimited). Any bad key is the same 401, and writes nothing anywhere.
 */
export const requireTenant = createMiddleware<AppEnv>(async (c, next) => {
  const presented = await presentTenantKey(c);
  admitCaller(c, presented, await tenantStub(c.env, presented.tenantId).authorize(presented.hash));
  await next();
});

/**
 * `requireTenant` for the routes that reserve an open-operation slot (worker/routes/open-operations.ts):
 * the key's shape and rate checks run here, and the tenant object is asked once, by
 * `withOpenOperation`, which authenticates and reserves in one call. A request with an
 * Idempotency-Key is authenticated here as usual, because its claim must follow authentication.
 */
export const requireTenantWithReservation = createMiddleware<AppEnv>(async (c, next) => {
  const presented = await presentTenantKey(c);
  if (c.req.header("idempotency-key") === undefined) c.set("presentedKey", presented);
  else admitCaller(c, presented, await tenantStub(c.env, presented.tenantId).authorize(presented.hash));
  await next();
});

/** The key's shape and the failed-authentication limit; no object is touched. */
async function presentTenantKey(c: AppContext): Promise<PresentedKey> {
  const key = presentedKey(c.req.raw.headers);
  const match = key ? KEY.exec(key) : null;
  const tenantId = match?.[1];
  if (!key || !tenantId) throw fail("Unauthenticated", "A valid API key is required");
  const hash = await sha256Hex(key);
  await limitUnproven(c, hash, { tenantId });
  return { tenantId, hash };
}

/** The failed-authentication limit (auth-limits.ts): 429 RateLimited for a credential not proven in this isolate, past the limit. */
async function limitUnproven(c: AppContext, hash: string, subject: AuthSubject): Promise<void> {
  if (provenKeys.has(hash, Date.now()) || (await unprovenAllowed(c.env, subject, c.req.header("cf-connecting-ip")))) return;
  throw fail("RateLimited", `Too many failed authentications; retry in ${UNPROVEN_RETRY_AFTER_SECONDS} s`, {
    retryAfterSeconds: UNPROVEN_RETRY_AFTER_SECONDS,
  });
}

/** Applies the tenant object's verdict on a presented key: 401, 429 over the request quota, or the caller. */
export function admitCaller(c: AppContext, presented: PresentedKey, verified: Authorization | null): void {
  if (!verified) {
    provenKeys.forget(presented.hash);
    throw fail("Unauthenticated", "A valid API key is required");
  }
  provenKeys.remember(presented.hash, Date.now());
  if (verified.limited) {
    throw fail("RateLimited", `The tenant's request quota is used up; retry in ${verified.retryAfterSeconds} s`, {
      retryAfterSeconds: verified.retryAfterSeconds,
    });
  }
  c.set("caller", { tenantId: presented.tenantId, keyId: verified.keyId });
}

/** The caller, authenticating a key `requireTenantWithReservation` left unasked (without reserving). */
export async function callerOf(c: AppContext): Promise<Caller> {
  const caller = c.get("caller");
  if (caller) return caller;
  const presented = c.get("presentedKey");
  admitCaller(c, presented, await tenantStub(c.env, presented.tenantId).authorize(presented.hash));
  return c.get("caller");
}

const encoder = new TextEncoder();

/**
 * The admin token (a secret) guards tenant and key administration. A deployment whose token is
 * missing or too short serves no admin route (503 NotConfigured). A presented token counts against
 * the failed-authentication limit as a tenant key does (429 RateLimited), unless it authenticated
 * recently in this isolate; then it is compared in constant time.
 */
export const requireAdmin = createMiddleware<AppEnv>(async (c, next) => {
  const expected = c.env.ADMIN_TOKEN;
  const unconfigured = adminTokenProblem(expected);
  if (unconfigured) throw fail("NotConfigured", unconfigured, { secret: "ADMIN_TOKEN" });
  const presented = presentedKey(c.req.raw.headers);
  if (!presented) throw fail("Unauthenticated", "The admin token is required");
  const hash = await sha256Hex(presented);
  await limitUnproven(c, hash, "admin");
  const expectedHash = await sha256Hex(expected);
  if (!crypto.subtle.timingSafeEqual(encoder.encode(expectedHash), encoder.encode(hash))) {
    provenKeys.forget(hash);
    throw fail("Unauthenticated", "The admin token is required");
  }
  provenKeys.remember(hash, Date.now());
  await next();
});
