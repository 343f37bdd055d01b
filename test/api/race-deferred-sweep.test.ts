import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { shardOf } from "../../durable-objects/session/due-work/deferred-registrations.ts";
import { indexed, tick } from "./deferred-helpers.ts";
import { call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { order, signalsReturn, waitsFor, type Wrapper } from "./race-helpers.ts";

// Race between objects (QUALITY R2, ARCHITECTURE D8): a suspended run's registration reaching its
// DeferredIndex shard against the minute cron's sweep reading that shard. The shard's `register`
// and `takeDue` are ordered by wrapping them (race-helpers.ts). Either way the run is polled
// and completes: by this tick when the registration came first, by the next one otherwise.

let restore: (() => Promise<void>) | undefined;
afterEach(async () => {
  await restore?.();
  restore = undefined;
});

async function deferredLane(prefix: string) {
  const setup = await laneSetup(prefix);
  await useScript(setup, [{ deferred: { ready: { text: "fetched by the cron" } } }]);
  const session = `${setup.tenantId}:${setup.sid}`;
  const shard = env.DEFERRED_INDEX.getByName(shardOf(session));
  const prompt = async () => (await call(`${setup.lanePath}/prompt`, { body: { prompt: "later", wait: 30 }, token: setup.key })).json<{ status: string; operationId: string }>();
  const state = async (operationId: string) =>
    (await call(`${setup.lanePath}/operations/${operationId}`, { token: setup.key })).json<{ state: string; result?: { status: string } }>();
  /** Only this session's registrations: the shard is shared with every other session hashed to it. */
  const mine = (wrapper: Wrapper): Wrapper => (run, args, points) => {
    const runs = args[0];
    return Array.isArray(runs) && runs.some((row: { session?: string }) => row.session === session) ? wrapper(run, args, points) : run();
  };
  return { shard, prompt, state, mine };
}

async function settledWithin(read: () => Promise<{ state: string; result?: { status: string } }>): Promise<string | undefined> {
  for (let i = 0; i < 200; i++) {
    const view = await read();
    if (view.state === "settled") return view.result?.status;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return undefined;
}

describe("race: deferred registration vs sweep", () => {
  it("the registration first: the tick that reads the shard after it polls the run, which completes", async () => {
    const lane = await deferredLane("rds_reg");
    ({ restore } = await order([{ stub: lane.shard, methods: { register: lane.mine(signalsReturn("registered")), takeDue: waitsFor("registered") } }]));
    // The tick starts after the suspension (its time is past the run's due time); only the shard's
    // order of register and takeDue differs between the two orders.
    const answer = await lane.prompt();
    await tick();
    expect(answer.status).toBe("suspended");
    expect(await settledWithin(() => lane.state(answer.operationId))).toBe("completed");
  });

  it("the sweep first: that tick does not see the run (it stays suspended and registered); the next tick polls it and it completes", async () => {
    const lane = await deferredLane("rds_swp");
    ({ restore } = await order([{ stub: lane.shard, methods: { takeDue: signalsReturn("swept"), register: lane.mine(waitsFor("swept")) } }]));
    // The tick starts after the suspension (its time is past the run's due time); only the shard's
    // order of register and takeDue differs between the two orders.
    const answer = await lane.prompt();
    await tick();
    expect(answer.status).toBe("suspended");
    await restore?.();
    restore = undefined;
    for (let i = 0; i < 200 && !(await indexed(lane.shard, answer.operationId)); i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(await indexed(lane.shard, answer.operationId)).toBe(true);
    expect((await lane.state(answer.operationId)).state).not.toBe("settled");
    await tick();
    expect(await settledWithin(() => lane.state(answer.operationId))).toBe("completed");
  });
});
