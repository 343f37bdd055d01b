import { runInDurableObject } from "cloudflare:test";

// Races between objects (QUALITY R2, reference §9.2) through the real app: one object's RPC
// methods are wrapped so that a call waits for a named point of another call (its entry, or its
// return) before it runs. The order is forced by those points, never by timing. RPC dispatches
// prototype methods, so the wrapper sits on the prototype and holds only the chosen instance's
// calls (lane-creation-race.test.ts does the same); `restore` puts the prototype back.

/** Named points the wrapped calls signal and wait for, shared by every wrapper of one `order`. */
export interface Points {
  signal(name: string): void;
  reached(name: string): Promise<void>;
}

/** Wraps one method: `run` calls the original with the same arguments. */
export type Wrapper = (run: () => Promise<unknown>, args: unknown[], points: Points) => Promise<unknown>;

/**
 * Points are plain flags, waited for by bounded polling (no timing is asserted): a promise resolved
 * in one object's request context and awaited in another's is refused by the runtime ("Cannot
 * perform I/O on behalf of a different Durable Object"), a flag read is not I/O.
 */
function points(): Points {
  const signalled = new Set<string>();
  return {
    signal: (name) => void signalled.add(name),
    async reached(name) {
      for (let i = 0; i < 3000 && !signalled.has(name); i++) await new Promise((resolve) => setTimeout(resolve, 5));
      if (!signalled.has(name)) throw new Error(`race point "${name}" was never reached`);
    },
  };
}

const RESTORE = "restoreRaceWrappers";

/**
 * Wraps methods of the object behind each stub; wrappers of one call share their points. Returns
 * `restore`, which unwraps every one of them.
 */
export async function order(wrapped: { stub: DurableObjectStub; methods: Record<string, Wrapper> }[]): Promise<{ restore: () => Promise<void> }> {
  const shared = points();
  for (const { stub, methods } of wrapped) {
    await runInDurableObject(stub, (instance: object) => {
      const prototype: object = Object.getPrototypeOf(instance);
      const restores: (() => void)[] = [];
      for (const [method, wrapper] of Object.entries(methods)) {
        const original: unknown = Reflect.get(prototype, method);
        if (typeof original !== "function") throw new Error(`no RPC method ${method}`);
        const own = Object.getOwnPropertyDescriptor(prototype, method);
        Reflect.set(prototype, method, function wrappedCall(this: unknown, ...args: unknown[]) {
          const run = (): Promise<unknown> => Promise.resolve(Reflect.apply(original, this, args));
          return this === instance ? wrapper(run, args, shared) : run();
        });
        restores.push(() => (own ? Object.defineProperty(prototype, method, own) : Reflect.deleteProperty(prototype, method)));
      }
      const earlier: unknown = Reflect.get(instance, RESTORE);
      Reflect.set(instance, RESTORE, () => {
        for (const restore of restores) restore();
        if (typeof earlier === "function") earlier();
      });
    });
  }
  return {
    // Last wrapped first: a second wrapper of the same class wraps the first one.
    restore: async () => {
      for (const { stub } of [...wrapped].reverse()) {
        await runInDurableObject(stub, (instance: object) => {
          const restore: unknown = Reflect.get(instance, RESTORE);
          Reflect.deleteProperty(instance, RESTORE);
          if (typeof restore === "function") restore();
        });
      }
    },
  };
}

/** A wrapper that signals `name` once the call returned. */
export const signalsReturn =
  (name: string): Wrapper =>
  async (run, _args, points) => {
    const value = await run();
    points.signal(name);
    return value;
  };

/** A wrapper that waits for `name` before the call runs. */
export const waitsFor =
  (name: string): Wrapper =>
  async (run, _args, points) => {
    await points.reached(name);
    return run();
  };
