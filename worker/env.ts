import type { Context } from "hono";
import type { BrowserTokenClaims } from "./middleware/browser-tokens.ts";

/** The authenticated caller: the tenant comes only from the verified key (ARCHITECTURE D2). */
export interface Caller {
  tenantId: string;
  keyId: string;
}

/** `requestId` is the server's own; `clientRequestId` a client's `X-Request-Id`, only echoed. */
/**
 * A key that passed its shape and rate checks, on the routes that reserve an open-operation slot:
 * their reservation checks it in the same tenant-object call (and authenticates it, when this
 * isolate did not admit it already).
 */
export interface PresentedKey {
  tenantId: string;
  hash: string;
}

/** `browserToken`: the claims of the browser token the request presented instead of a key. */
export type AppEnv = { Bindings: Env; Variables: { requestId: string; clientRequestId: string | undefined; caller: Caller; presentedKey: PresentedKey; browserToken: BrowserTokenClaims | undefined } };
export type AppContext = Context<AppEnv>;

export const sessionObjectName = (tenantId: string, sessionId: string): string => `${tenantId}:${sessionId}`;

export function sessionStub(env: Env, tenantId: string, sessionId: string) {
  return env.SESSIONS.getByName(sessionObjectName(tenantId, sessionId));
}

export function tenantStub(env: Env, tenantId: string) {
  return env.TENANTS.getByName(tenantId);
}
