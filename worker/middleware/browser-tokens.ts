import * as v from "valibot";
import { IdSchema } from "../../schema/api.ts";
import { BROWSER_TOKEN_LIMITS, TokenScopeSchema } from "../../schema/browser-tokens.ts";
import { LaneNameSchema } from "../../schema/lane-api.ts";
import { fromBase64Url, toBase64Url } from "../../secrets/base64url.ts";
import { sign, signingKey, verifySignature } from "../../secrets/signing.ts";

/**
 * Browser tokens (docs/api-tenants.md "Browser tokens"): self-contained and signed, so a token is
 * checked without storage and nothing is written per token. `bt_<claims>.<signature>`: the claims
 * are base64url JSON, the signature an HMAC-SHA-256 over `bt_<claims>` with a key derived from
 * `SECRETS_KEY` (secrets/signing.ts). The claims name the minting key by its SHA-256 hash (the
 * form the tenant's record keeps; never the key), which every request with the token presents in
 * the key's place (worker/middleware/auth.ts): the token works only while that key does, trusted
 * and revoked exactly as the key is (verified-keys.ts, tenant-watches.ts).
 */
export const BrowserTokenClaimsSchema = v.strictObject({
  /** Tenant. */
  t: IdSchema,
  /** Session. */
  s: IdSchema,
  /**
   * The session's creation time: a session deleted and created again under its id is another
   * (token-auth.ts). Absent only from tokens minted before it was carried (they expire within 1 h).
   */
  c: v.optional(v.pipe(v.number(), v.integer())),
  /** The minting key's SHA-256 hash (hex). */
  k: v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/)),
  /** Scopes. */
  p: v.pipe(v.array(TokenScopeSchema), v.minLength(1), v.maxLength(2)),
  /** Lanes, when the token is limited to some. */
  l: v.optional(v.pipe(v.array(LaneNameSchema), v.minLength(1), v.maxLength(BROWSER_TOKEN_LIMITS.maxLanes))),
  /** Expiry, ms since the epoch. */
  e: v.pipe(v.number(), v.integer()),
});
export type BrowserTokenClaims = v.InferOutput<typeof BrowserTokenClaimsSchema>;

const PREFIX = "bt_";
/** Claims at their largest (16 lanes of 64 characters) stay well under this. */
const MAX_TOKEN_LENGTH = 4096;
const SHAPE = /^bt_([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Whether a presented credential is meant as a browser token (not a tenant key): its prefix. */
export const isBrowserToken = (credential: string): boolean => credential.startsWith(PREFIX);

/** A signed token for `claims`. Throws SecretsKeyMissing when the deployment has no usable `SECRETS_KEY`. */
export async function signBrowserToken(env: Pick<Env, "SECRETS_KEY">, claims: BrowserTokenClaims): Promise<string> {
  const signed = `${PREFIX}${toBase64Url(encoder.encode(JSON.stringify(claims)))}`;
  return `${signed}.${await sign(await signingKey(env.SECRETS_KEY, "browser-token"), signed)}`;
}

/** What a presented token says, and whether it holds: `valid` only for this service's own signature, unexpired at `now`. */
export type ReadToken = { valid: true; claims: BrowserTokenClaims } | { valid: false; tenantId?: string };

/**
 * Reads a presented token. Not valid: malformed, not signed by this deployment, or expired; then
 * `tenantId` is the tenant its claims name, when they are readable (the failed-authentication
 * limit counts against it, as against a wrong key's tenant).
 */
export async function readBrowserToken(env: Pick<Env, "SECRETS_KEY">, token: string, now: number): Promise<ReadToken> {
  const match = token.length <= MAX_TOKEN_LENGTH ? SHAPE.exec(token) : null;
  const payload = match?.[1];
  const signature = match?.[2];
  if (payload === undefined || signature === undefined) return { valid: false };
  const claims = parseClaims(payload);
  if (!claims) return { valid: false };
  const signed = await verifySignature(await signingKey(env.SECRETS_KEY, "browser-token"), `${PREFIX}${payload}`, signature);
  if (!signed || claims.e <= now) return { valid: false, tenantId: claims.t };
  return { valid: true, claims };
}

function parseClaims(payload: string): BrowserTokenClaims | undefined {
  const bytes = fromBase64Url(payload);
  if (!bytes) return undefined;
  try {
    const parsed = v.safeParse(BrowserTokenClaimsSchema, JSON.parse(decoder.decode(bytes)));
    return parsed.success ? parsed.output : undefined;
  } catch {
    return undefined;
  }
}
