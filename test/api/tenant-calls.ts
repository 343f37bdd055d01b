import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { windowStartOf } from "../../durable-objects/tenant/quota-leases.ts";
import { KEY_TRUST_MS } from "../../worker/middleware/verified-keys.ts";

// The calls a tenant's TenantObject receives (QUALITY P13), observed on the real instance: its RPC
// methods are wrapped in place to record their names; nothing else changes. Used by the tests and
// by the P13 bench rows.

/** The object's own work, not calls it receives. */
const OWN_WORK = new Set(["constructor", "alarm"]);

/**
 * Records the calls the tenant object `tenantId` receives, by name, from now on. RPC dispatches only
 * prototype methods, so the wrappers sit on the class's prototype and record only this instance's
 * calls; `stop` puts the prototype back.
 */
export async function recordCalls(tenantId: string): Promise<{ read: () => Promise<string[]>; stop: () => Promise<void> }> {
  await runInDurableObject(env.TENANTS.getByName(tenantId), (instance: TenantObject) => {
    const calls: string[] = [];
    const prototype: object = Object.getPrototypeOf(instance);
    const restore: (() => void)[] = [];
    for (const name of Object.getOwnPropertyNames(prototype)) {
      const own = Object.getOwnPropertyDescriptor(prototype, name);
      const original: unknown = own?.value;
      if (OWN_WORK.has(name) || typeof original !== "function") continue;
      Reflect.set(prototype, name, function recorded(this: unknown, ...args: unknown[]) {
        if (this === instance) calls.push(name);
        return Reflect.apply(original, this, args);
      });
      restore.push(() => (own ? Object.defineProperty(prototype, name, own) : Reflect.deleteProperty(prototype, name)));
    }
    Reflect.set(instance, "recordedCalls", { calls, restore });
  });
  const recorded = (instance: TenantObject): { calls: string[]; restore: (() => void)[] } => Reflect.get(instance, "recordedCalls");
  return {
    read: () => runInDurableObject(env.TENANTS.getByName(tenantId), (instance: TenantObject) => [...recorded(instance).calls]),
    stop: () => runInDurableObject(env.TENANTS.getByName(tenantId), (instance: TenantObject) => recorded(instance).restore.forEach((undo) => undo())),
  };
}

/** The recorded calls once `done` holds (a forward after the answer), polled within a bound. */
export async function pollCalls(read: () => Promise<string[]>, done: (calls: string[]) => boolean): Promise<string[]> {
  let calls: string[] = [];
  for (let attempt = 0; attempt < 200; attempt++) {
    calls = await read();
    if (done(calls)) return calls;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return calls;
}

/**
 * The tenant object's calls during `measured` on a warm isolate: `warmUp` (a request with the same
 * key) runs right before, so the key is trusted and a lease is held. On a machine so slow that the
 * key's trust (KEY_TRUST_MS) or the lease's minute could have run out in between, the measure is
 * taken again: the count asserted is always a warm isolate's, whatever the machine's speed.
 */
export async function warmCalls(tenantId: string, warmUp: () => Promise<void>, measured: () => Promise<void>, done: (calls: string[]) => boolean = () => true): Promise<string[]> {
  for (let attempt = 0; ; attempt++) {
    const start = Date.now();
    await warmUp();
    const recorder = await recordCalls(tenantId);
    try {
      await measured();
      const calls = await pollCalls(recorder.read, done);
      const end = Date.now();
      if ((end - start < KEY_TRUST_MS && windowStartOf(start) === windowStartOf(end)) || attempt === 4) return calls;
    } finally {
      await recorder.stop();
    }
  }
}
