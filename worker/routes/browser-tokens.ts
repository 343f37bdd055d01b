import { Hono } from "hono";
import type { ApiError } from "../../schema/errors.ts";
import { BROWSER_TOKEN_LIMITS, CreateBrowserTokenSchema } from "../../schema/browser-tokens.ts";
import { secretsKeyProblem } from "../../secrets/secret-box.ts";
import type { AppEnv } from "../env.ts";
import { fail, replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { signBrowserToken } from "../middleware/browser-tokens.ts";
import { replayInstead } from "../middleware/idempotency.ts";
import { jsonBody } from "../validate.ts";
import { sessionIdempotency, sessionTarget } from "./session-target.ts";

/**
 * `POST /v1/sessions/{sid}/tokens` (docs/api-tenants.md "Browser tokens"), mounted at that path:
 * a tenant key mints a short-lived token for one of its sessions; a browser token cannot call it
 * (403 TokenScope, from the token's own scope check). Nothing is stored: the token is signed
 * (worker/middleware/browser-tokens.ts) and shown this once.
 */
export const browserTokenRoutes = new Hono<AppEnv>().post("/", requireTenant, sessionIdempotency, async (c) => {
  const { tenantId, sessionId, stub } = sessionTarget(c);
  const { scopes, lanes, ttlSeconds = BROWSER_TOKEN_LIMITS.defaultTtlSeconds } = await jsonBody(c, CreateBrowserTokenSchema);
  const unconfigured = secretsKeyProblem(c.env.SECRETS_KEY);
  if (unconfigured) throw fail("NotConfigured", unconfigured, { secret: "SECRETS_KEY" });
  // The session must exist (404 SessionNotFound, another tenant's included): a token for nothing is refused.
  const { createdAt } = replyValue(await stub.info());
  const expiresAt = Date.now() + ttlSeconds * 1000;
  const claims = { t: tenantId, s: sessionId, c: createdAt, k: c.get("presentedKey").hash, p: [...new Set(scopes)], ...(lanes && { l: [...new Set(lanes)] }), e: expiresAt };
  const token = await signBrowserToken(c.env, claims);
  // A secret is shown once: a repeat with the same Idempotency-Key answers 409 instead (mint another).
  const notReplayed: ApiError = {
    code: "KeySecretNotReplayed",
    message: "A browser token was minted by the first request with this Idempotency-Key; a token is shown once and never again. Mint another.",
    details: { expiresAt },
  };
  replayInstead(c, 409, { error: notReplayed });
  return c.json({ token, expiresAt }, 201);
});
