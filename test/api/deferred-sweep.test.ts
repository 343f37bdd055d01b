import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { shardOf } from "../../durable-objects/session/due-work/deferred-registrations.ts";
import { call } from "./helpers.ts";
import { receivedAtLeast, receiver, register } from "./webhooks-helpers.ts";
import { laneSetup, untilAt, useScript } from "./lane-helpers.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { indexed, suspendedRun, tick } from "./deferred-helpers.ts";

// The minute cron (ARCHITECTURE D8) through the worker's own `scheduled()`: a suspended run is
// registered with its DeferredIndex shard after the suspending commit, the sweep grants it one
// poll, stale rows are dropped, and many runs are resumed within the per-tick bound, none twice.

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, tries = 200): Promise<T> {
  for (let attempt = 0; attempt < tries; attempt++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function settledStatus(setup: { lanePath: string; key: string }, operationId: string): Promise<string | undefined> {
  const view = await (await call(`${setup.lanePath}/operations/${operationId}?wait=10`, { token: setup.key })).json<{ state: string; result?: { status: string } }>();
  return view.state === "settled" ? view.result?.status : undefined;
}

describe("the deferred sweep (scheduled)", () => {
  it("registers a suspended run after its commit, resumes it on the next tick, and its row leaves the index with the settlement", async () => {
    const run = await suspendedRun("swp");
    await until("the registration", () => indexed(run.shard, run.operationId), (held) => held);
    await tick();
    expect(await until("the run to settle", () => settledStatus(run, run.operationId), (status) => status !== undefined)).toBe("completed");
    // No later sweep is needed to find it gone (ARCHITECTURE D8).
    await until("the row to leave the index", () => indexed(run.shard, run.operationId), (held) => !held);
  });

  it("a suspended run survives its object being killed: the next tick resumes it in a fresh object", async () => {
    const run = await suspendedRun("swpk");
    await until("the registration", () => run.shard.size(), (size) => size > 0);
    await abortAllDurableObjects();
    await tick();
    expect(await until("the run to settle", () => settledStatus(run, run.operationId), (status) => status !== undefined)).toBe("completed");
  });

  it("a handle past its expiry is failed deferred_expired by the tick", async () => {
    const setup = await laneSetup("swpx");
    await useScript(setup, [{ deferred: { expiresAfterMs: 1_000, ready: { text: "too late" } } }]);
    const answer = await (await call(`${setup.lanePath}/prompt`, { body: { prompt: "later", wait: 30 }, token: setup.key })).json<{ status: string; operationId: string }>();
    expect(answer.status).toBe("suspended");
    await until("the registration", () => env.DEFERRED_INDEX.getByName(shardOf(`${setup.tenantId}:${setup.sid}`)).size(), (size) => size > 0);
    // Let the handle expire (no assertion on time: the tick must find it past expiry).
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await tick();
    const view = await (await call(`${setup.lanePath}/operations/${answer.operationId}?wait=10`, { token: setup.key })).json<{ state: string; result?: { status: string; error?: { code: string } } }>();
    expect(view).toMatchObject({ state: "settled", result: { status: "failed", error: { code: "deferred_expired" } } });
  });

  it("a poll lost with its object after the handle expired: the sweep's pass fails the run deferred_expired instead of polling again", async () => {
    const setup = await laneSetup("swpxp");
    // The ready answer takes long to stream: the poll is still in flight when the object dies.
    await useScript(setup, [{ deferred: { expiresAfterMs: 1_000, ready: { text: "too late", delayMs: 30_000 } } }]);
    const answer = await (await call(`${setup.lanePath}/prompt`, { body: { prompt: "later", wait: 30 }, token: setup.key })).json<{ status: string; operationId: string }>();
    expect(answer.status).toBe("suspended");
    expect((await call(`${setup.lanePath}/operations/${answer.operationId}/resume`, { method: "POST", token: setup.key })).status).toBe(200);
    await untilAt(setup, "deferred.effect_pending");
    await abortAllDurableObjects();
    // Let the handle expire (no assertion on time: the sweep must find it past expiry).
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const stub = env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`);
    expect(await stub.sweepDeferred("main", answer.operationId)).toBe("expired");
    const view = await (await call(`${setup.lanePath}/operations/${answer.operationId}?wait=10`, { token: setup.key })).json<{ state: string; result?: { status: string; error?: { code: string } } }>();
    expect(view).toMatchObject({ state: "settled", result: { status: "failed", error: { code: "deferred_expired" } } });
    const snapshot = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: LaneSnapshot }>();
    // Only the deferring answer is on the branch: no poll answered after the kill.
    const stops = snapshot.snapshot.transcript.flatMap((entry) => (entry.type === "message" && entry.message.role === "assistant" ? [entry.message.stopReason] : []));
    expect(stops).toEqual(["deferred"]);
  });

  it("tells the tenant's webhook operation.suspended when the run suspends, then operation.settled", async () => {
    const setup = await laneSetup("swph");
    const scope = receiver("suspended");
    await register(setup.key, scope.url("ok"), ["operation.suspended", "operation.settled"]);
    await useScript(setup, [{ deferred: { ready: { text: "worth the wait" } } }]);
    const answer = await (await call(`${setup.lanePath}/prompt`, { body: { prompt: "later", wait: 30 }, token: setup.key })).json<{ operationId: string }>();
    const [suspended] = await receivedAtLeast(scope, 1);
    expect(JSON.parse(suspended?.rawBody ?? "{}")).toMatchObject({ type: "operation.suspended", data: { sessionId: setup.sid, lane: "main", operationId: answer.operationId, pollAt: expect.any(Number) } });
    await until("the registration", () => env.DEFERRED_INDEX.getByName(shardOf(`${setup.tenantId}:${setup.sid}`)).size(), (size) => size > 0);
    await tick();
    const calls = await receivedAtLeast(scope, 2);
    expect(calls.map((call) => JSON.parse(call.rawBody).type)).toEqual(["operation.suspended", "operation.settled"]);
  });

  it("leaves a run alone until its pollAfterMs has passed", async () => {
    const run = await suspendedRun("swpl", { text: "not yet" }, 10 * 60_000);
    await until("the registration", () => run.shard.size(), (size) => size > 0);
    await tick();
    const view = await (await call(`${run.lanePath}/operations/${run.operationId}`, { token: run.key })).json<{ state: string; at: string }>();
    expect(view).toMatchObject({ state: "active", at: "deferred.suspended" });
  });

  it("a registration lost with the object is forwarded by its alarm", async () => {
    const setup = await laneSetup("swpa");
    await useScript(setup, [{ deferred: { ready: { text: "x" } } }]);
    const stub = env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`);
    // Suspend inside the object without letting the after-commit forward run (the test holds the turn),
    // then count on the alarm: the registration row is part of the suspending commit.
    await runInDurableObject(stub, async (instance: SessionObject) => {
      const lane = (await instance.harness()).getLane("main");
      if (!lane) throw new Error("no lane");
      const admitted = await lane.accept({ kind: "prompt", prompt: "later" });
      if (!admitted.ok) throw new Error("not accepted");
      await lane.drive({ operationId: admitted.value.operationId });
    });
    await until("the forward or the alarm", async () => {
      await runDurableObjectAlarm(stub);
      return env.DEFERRED_INDEX.getByName(shardOf(`${setup.tenantId}:${setup.sid}`)).size();
    }, (size) => size > 0);
  });
});
