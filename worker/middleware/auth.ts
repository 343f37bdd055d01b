import { createMiddleware } from "hono/factory";
import { sha256Hex, type Authorization } from "../../durable-objects/tenant/tenant-object.ts";
import { tenantStub, type AppContext, type AppEnv, type Caller, type PresentedKey } from "../env.ts";
import { adminTokenProblem } from "../admin-token.ts";
import { fail } from "../http-error.ts";
import { LEASE_MAX, QuotaLeases } from "../../durable-objects/tenant/quota-leases.ts";
import { limitUnproven, provenKeys } from "./auth-limits.ts";
import { isBrowserToken } from "./browser-tokens.ts";
import { presentBrowserToken } from "./token-auth.ts";
import { verifiedKeys } from "./verified-keys.ts";

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

/** This isolate's request-quota leases, taken from the tenants' objects (quota-leases.ts). */
export const quotaLeases = new QuotaLeases();

/**
 * Authenticates a tenant key (ARCHITECTURE D17): shape first, then the failed-authentication limit
 * for keys not yet proven in this isolate (auth-limits.ts; 429 RateLimited with Retry-After,
 * before any object is touched), then the key and the tenant's per-minute request quota. A warm
 * isolate asks no object: the key was verified by its tenant's object less than KEY_TRUST_MS ago
 * (verified-keys.ts: the bound on a revoked key's use elsewhere) and the request is spent from a
 * lease the object granted (quota-leases.ts). Otherwise the object verifies the key and grants a
 * lease in one call (429 RateLimited past the quota). Any bad key is the same 401, and writes
 * nothing anywhere.
 */
export const requireTenant = createMiddleware<AppEnv>(async (c, next) => {
  const presented = await presentTenantKey(c);
  if (!admitWarm(c, presented)) await admitCold(c, presented);
  await next();
});

/**
 * `requireTenant` for the routes that reserve an open-operation slot (worker/routes/open-operations.ts):
 * the tenant object is asked once, by `withOpenOperation`, which checks the key, leases quota when
 * this isolate has none, and reserves in one call. A warm isolate admits here (the reservation
 * still checks the key). A request with an Idempotency-Key is authenticated here as usual, because
 * its claim must follow authentication.
 */
export const requireTenantWithReservation = createMiddleware<AppEnv>(async (c, next) => {
  const presented = await presentTenantKey(c);
  if (!admitWarm(c, presented) && c.req.header("idempotency-key") !== undefined) await admitCold(c, presented);
  await next();
});

/**
 * The credential's shape and the failed-authentication limit; no object is touched. A browser
 * token (token-auth.ts) presents the key that minted it, once its signature, expiry and scope hold.
 */
async function presentTenantKey(c: AppContext): Promise<PresentedKey> {
  const credential = presentedCredential(c);
  const presented = credential !== undefined && isBrowserToken(credential.value) ? await presentBrowserToken(c, credential.value) : await presentKey(c, credential);
  c.set("presentedKey", presented);
  return presented;
}

/**
 * The Authorization header or `bearer.<…>` subprotocol, else, on a GET, `?access_token=` (for
 * `EventSource`, which cannot set headers), which takes browser tokens only: a tenant key in a URL
 * would end up in logs and histories.
 */
function presentedCredential(c: AppContext): { value: string; inUrl: boolean } | undefined {
  const value = presentedKey(c.req.raw.headers);
  if (value !== undefined) return { value, inUrl: false };
  // A malformed Authorization header is refused as such, whatever the query holds.
  if (c.req.header("authorization") !== undefined || c.req.method !== "GET") return undefined;
  const query = c.req.query("access_token");
  return query === undefined ? undefined : { value: query, inUrl: true };
}

async function presentKey(c: AppContext, credential: { value: string; inUrl: boolean } | undefined): Promise<PresentedKey> {
  if (credential?.inUrl) throw fail("Unauthenticated", "access_token takes a browser token only; send a key in the Authorization header");
  const key = credential?.value;
  const match = key ? KEY.exec(key) : null;
  const tenantId = match?.[1];
  if (!key || !tenantId) throw fail("Unauthenticated", "A valid API key is required");
  const hash = await sha256Hex(key);
  // A key this isolate trusts (verified-keys.ts) is proven, whatever the admin route forgot of it.
  if (verifiedKeys.get(hash, Date.now()) === undefined) await limitUnproven(c, hash, { tenantId });
  return { tenantId, hash };
}

/** Admits without a call: the key is trusted here still and a held lease has a request left. */
function admitWarm(c: AppContext, presented: PresentedKey): boolean {
  const now = Date.now();
  const key = verifiedKeys.get(presented.hash, now);
  if (!key || !quotaLeases.spend(presented.tenantId, now)) return false;
  c.set("caller", { tenantId: key.tenantId, keyId: key.keyId });
  return true;
}

/** Asks the tenant object to verify the key, with a lease unless one held here paid for the request. */
async function admitCold(c: AppContext, presented: PresentedKey): Promise<void> {
  const admission = beginAdmission(presented.tenantId, false);
  admitCaller(c, presented, admission, await tenantStub(c.env, presented.tenantId).authorizeLease(presented.hash, admission.wanted));
}

/** One call's worth of admission: when it was asked (the key's trust starts then), and what it asks for. */
export interface Admission {
  askedAt: number;
  generation: number;
  /** The request was paid from a lease held here: the call only checks the key (wanted 0). */
  paid: boolean;
  wanted: number;
}

/** Pays the request from a held lease when one has a request left, unless it was paid already. */
export function beginAdmission(tenantId: string, alreadyPaid: boolean): Admission {
  const askedAt = Date.now();
  const fromLease = alreadyPaid || quotaLeases.spend(tenantId, askedAt);
  return { askedAt, generation: verifiedKeys.generation(), paid: fromLease, wanted: fromLease ? 0 : LEASE_MAX };
}

/**
 * Applies the tenant object's verdict on a presented key: 401 (and the key is no longer trusted
 * here), 429 over the request quota, or the caller, with the key trusted from when it was asked
 * and the rest of a granted lease held (this request takes one of it).
 */
export function admitCaller(c: AppContext, presented: PresentedKey, admission: Admission, verified: Authorization | null): void {
  if (!verified) {
    verifiedKeys.forget(presented.hash);
    provenKeys.forget(presented.hash);
    throw fail("Unauthenticated", "A valid API key is required");
  }
  provenKeys.remember(presented.hash, Date.now());
  verifiedKeys.remember(presented.hash, { tenantId: presented.tenantId, keyId: verified.keyId, verifiedAt: admission.askedAt }, admission.generation);
  if (verified.limited) {
    throw fail("RateLimited", `The tenant's request quota is used up; retry in ${verified.retryAfterSeconds} s`, {
      retryAfterSeconds: verified.retryAfterSeconds,
    });
  }
  if (!admission.paid) quotaLeases.hold(presented.tenantId, verified.windowStart, verified.granted - 1);
  c.set("caller", { tenantId: presented.tenantId, keyId: verified.keyId });
}

/** The caller, authenticating a key `requireTenantWithReservation` left unasked (without reserving). */
export async function callerOf(c: AppContext): Promise<Caller> {
  const caller = c.get("caller");
  if (caller) return caller;
  await admitCold(c, c.get("presentedKey"));
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
  // Proven as the admin token, under a name of its own: a tenant key presented here and refused
  // must stay proven for its tenant.
  const proof = `admin:${hash}`;
  await limitUnproven(c, proof, "admin");
  const expectedHash = await sha256Hex(expected);
  if (!crypto.subtle.timingSafeEqual(encoder.encode(expectedHash), encoder.encode(hash))) {
    provenKeys.forget(proof);
    throw fail("Unauthenticated", "The admin token is not this service's ADMIN_TOKEN");
  }
  provenKeys.remember(proof, Date.now());
  await next();
});
