import { secretsKeyProblem } from "../../secrets/secret-box.ts";
import { fromWire } from "../../schema/wire.ts";
import { sessionStub, type AppContext, type PresentedKey } from "../env.ts";
import { fail, type HttpFailure } from "../http-error.ts";
import { limitUnproven } from "./auth-limits.ts";
import { readBrowserToken, type BrowserTokenClaims } from "./browser-tokens.ts";
import { tokenScopeRefusal } from "./token-scopes.ts";
import { sessionIncarnations } from "./session-incarnations.ts";
import { verifiedKeys } from "./verified-keys.ts";

/**
 * A presented browser token (browser-tokens.ts), as far as it can be checked without an object:
 * 401 Unauthenticated when it is malformed, forged or expired (a readable one counts against the
 * failed-authentication limit of the tenant it names, as a wrong key does), 403 TokenScope when
 * this request is outside its session, lanes or scopes. Otherwise the request goes on as one
 * presenting the key that minted it: that key is then verified, trusted and rate-limited exactly
 * as if it were presented itself (auth.ts), so the token dies with the key, and the tenant's
 * request quota counts the request. The caller's `keyId` is the minting key's, so a watch socket
 * opened with the token is registered, and closed on revocation, as that key's.
 */
export async function presentBrowserToken(c: AppContext, token: string): Promise<PresentedKey> {
  const unconfigured = secretsKeyProblem(c.env.SECRETS_KEY);
  if (unconfigured) throw fail("NotConfigured", unconfigured, { secret: "SECRETS_KEY" });
  const read = await readBrowserToken(c.env, token, Date.now());
  if (!read.valid) {
    // Never remembered as proven: each such token counts.
    if (read.tenantId !== undefined) await limitUnproven(c, "browser-token:invalid", { tenantId: read.tenantId });
    throw fail("Unauthenticated", "The browser token is not valid (malformed, not issued here, or expired)");
  }
  const { claims } = read;
  const refusal = (await tokenScopeRefusal(c, claims)) ?? (await sessionRefusal(c, claims));
  if (refusal) throw refusal;
  if (verifiedKeys.get(claims.k, Date.now()) === undefined) await limitUnproven(c, claims.k, { tenantId: claims.t });
  c.set("browserToken", claims);
  return { tenantId: claims.t, hash: claims.k };
}

/**
 * 403 TokenScope when the token's session was deleted and another created under its id since the
 * token was minted: the creation times differ. The object is asked at most once per KEY_TRUST_MS
 * in a warm isolate (session-incarnations.ts). A session that is gone now is left to the route,
 * which answers 404 as it does for a key.
 */
async function sessionRefusal(c: AppContext, claims: BrowserTokenClaims): Promise<HttpFailure | undefined> {
  if (claims.c === undefined) return undefined;
  const now = Date.now();
  let createdAt = sessionIncarnations.get(claims.t, claims.s, now);
  if (createdAt === undefined) {
    const answer = fromWire(await sessionStub(c.env, claims.t, claims.s).createdAt());
    if (!answer.ok) return undefined;
    createdAt = answer.value;
    sessionIncarnations.remember(claims.t, claims.s, createdAt, now);
  }
  return createdAt === claims.c ? undefined : fail("TokenScope", "This browser token is for a session deleted since; mint one for the session now under this id");
}
