import type { Context } from "hono";

/** The authenticated caller: the tenant comes only from the verified key (ARCHITECTURE D2). */
export interface Caller {
  tenantId: string;
  keyId: string;
}

/** `requestId` is the server's own; `clientRequestId` a client's `X-Request-Id`, only echoed. */
export type AppEnv = { Bindings: Env; Variables: { requestId: string; clientRequestId: string | undefined; caller: Caller } };
export type AppContext = Context<AppEnv>;

export const sessionObjectName = (tenantId: string, sessionId: string): string => `${tenantId}:${sessionId}`;

export function sessionStub(env: Env, tenantId: string, sessionId: string) {
  return env.SESSIONS.getByName(sessionObjectName(tenantId, sessionId));
}

export function tenantStub(env: Env, tenantId: string) {
  return env.TENANTS.getByName(tenantId);
}
