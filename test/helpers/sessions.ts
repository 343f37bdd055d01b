import { env } from "cloudflare:workers";
import type { ApiError, RpcResult } from "../../schema/errors.ts";
import { fromWire, type Wire } from "../../schema/wire.ts";

let counter = 0;

/** A fresh object name per test: storage is shared by every test in a file. */
export function uniqueSessionName(prefix = "s"): { tenantId: string; sessionId: string; name: string } {
  const tenantId = "tenant_test";
  const sessionId = `${prefix}_${Date.now().toString(36)}_${(counter++).toString(36)}_${crypto.randomUUID().slice(0, 8)}`;
  return { tenantId, sessionId, name: `${tenantId}:${sessionId}` };
}

export function sessionStub(name: string) {
  return env.SESSIONS.getByName(name);
}

/** A stub of a freshly created, empty session. */
export async function createSession(prefix?: string) {
  const ids = uniqueSessionName(prefix);
  const stub = sessionStub(ids.name);
  unwrap(await stub.create({ tenantId: ids.tenantId, sessionId: ids.sessionId }));
  return { ...ids, stub };
}

/** The value of a successful RPC reply; a tagged failure fails the test. */
export function unwrap<T>(reply: Wire<RpcResult<T>>): T {
  const result = fromWire(reply);
  if (!result.ok) throw new Error(`Expected success, got ${result.error.code}: ${result.error.message}`);
  return result.value;
}

/** The tagged error of a failed RPC reply; a success fails the test. */
export function failure<T>(reply: Wire<RpcResult<T>>): ApiError {
  const result = fromWire(reply);
  if (result.ok) throw new Error(`Expected a failure, got ${JSON.stringify(result.value)}`);
  return result.error;
}

export const failureCode = (reply: Wire<RpcResult<unknown>>): string => {
  const result = fromWire(reply);
  return result.ok ? "ok" : result.error.code;
};
