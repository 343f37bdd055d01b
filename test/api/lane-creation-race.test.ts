import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import type { LaneInfo } from "../../schema/lane.ts";
import { call } from "./helpers.ts";
import { execution } from "./lane-helpers.ts";
import { tenantWithSession, user } from "./session-helpers.ts";

// Issue 30 item 3 (ARCHITECTURE D4: never check, await, then write): two PUT …/lanes/{lane} of a
// new lane that are in the session object at the same time. Exactly one creates it (201) and
// applies its configuration; the other answers 200 with the lane as that creator made it.

/**
 * Holds the tenant object's answers to `providerSettings` (the lane creation's one await on
 * another object) until `count` calls wait for them, so that `count` PUTs are inside the session
 * object at once whatever order they arrived in. RPC dispatches prototype methods, so the barrier
 * sits on the prototype and holds only this tenant's calls; `restore` puts the prototype back.
 */
async function holdProviderSettings(tenantId: string, count: number): Promise<{ restore: () => Promise<void> }> {
  await runInDurableObject(env.TENANTS.getByName(tenantId), (instance: TenantObject) => {
    const prototype: object = Object.getPrototypeOf(instance);
    const original: unknown = Reflect.get(prototype, "providerSettings");
    if (typeof original !== "function") throw new Error("TenantObject has no providerSettings");
    const own = Object.getOwnPropertyDescriptor(prototype, "providerSettings");
    let waiting = 0;
    let release!: () => void;
    const all = new Promise<void>((resolve) => {
      release = resolve;
    });
    Reflect.set(prototype, "providerSettings", async function held(this: unknown, ...args: unknown[]) {
      if (this === instance && ++waiting === count) release();
      if (this === instance) await all;
      return Reflect.apply(original, this, args);
    });
    Reflect.set(instance, "restoreProviderSettings", () => (own ? Object.defineProperty(prototype, "providerSettings", own) : Reflect.deleteProperty(prototype, "providerSettings")));
  });
  return {
    restore: () =>
      runInDurableObject(env.TENANTS.getByName(tenantId), (instance: TenantObject) => {
        const restore: unknown = Reflect.get(instance, "restoreProviderSettings");
        if (typeof restore === "function") restore();
      }),
  };
}

describe("issue 30 item 3: concurrent PUTs of a new lane", () => {
  it("exactly one creates it (201) with its configuration; the other answers 200 with the lane as created", async () => {
    const { tenantId, key, base } = await tenantWithSession("lanerace");
    expect((await call(`${base}/branches`, { body: { name: "root" }, token: key })).status).toBe(201);
    const { entryId } = await (await call(`${base}/branches/root/entries`, { body: { message: user("start here") }, token: key })).json<{ entryId: string }>();
    const barrier = await holdProviderSettings(tenantId, 2);
    const bodies = [
      { createAt: entryId, thinkingLevel: "high" },
      { createAt: null, thinkingLevel: "low" },
    ];
    const [first, second] = await Promise.all(bodies.map((body) => call(`${base}/lanes/raced`, { method: "PUT", body, token: key })));
    await barrier.restore();
    const answers = [
      { status: first?.status, body: await first?.json<LaneInfo>(), sent: bodies[0] },
      { status: second?.status, body: await second?.json<LaneInfo>(), sent: bodies[1] },
    ];
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 201]);
    const creator = answers.find((answer) => answer.status === 201);
    const other = answers.find((answer) => answer.status === 200);
    // The lane as its creator made it: its createAt, and its thinking level alone.
    expect(creator?.body).toEqual({ name: "raced", tipId: creator?.sent?.createAt, operation: null });
    expect(other?.body).toEqual(creator?.body);
    const info = await execution({ key, lanePath: `${base}/lanes/raced` });
    expect(info).toMatchObject({ tipId: creator?.sent?.createAt, configuration: { thinkingLevel: creator?.sent?.thinkingLevel } });
  });
});
