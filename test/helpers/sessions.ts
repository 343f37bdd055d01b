import { env } from "cloudflare:workers";
import type { RpcResult } from "../../schema/errors.ts";

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

export function unwrap<T>(result: RpcResult<T>): T {
  if (!result.ok) throw new Error(`Expected success, got ${result.error.code}: ${result.error.message}`);
  return result.value;
}
