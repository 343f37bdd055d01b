import { createExecutionContext, createScheduledController, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { DEFERRED_INDEX_SHARDS, shardName } from "../../durable-objects/session/due-work/deferred-registrations.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import { SWEEP_PER_SHARD, type SweepMetrics } from "../../worker/deferred-sweep.ts";
import worker from "../../worker/index.ts";
import { adminToken, call, newTenant } from "./helpers.ts";

// The cron at full size (ISSUE 12 "Show"): 1,000 runs suspended on deferred answers across 1,000
// sessions of 5 tenants, resumed by successive `scheduled()` ticks of the real worker, each tick
// within the per-shard bound, and every run polled exactly once (its branch holds the deferred
// answer and one fetched answer, never two).

const COUNT = 1_000;
const TENANTS = 5;
const SEEDING_IN_FLIGHT = 25;
const SCRIPT = { provider: "scripted", modelId: "script" };

interface Run {
  sid: string;
  tenantId: string;
  operationId: string;
}

/** One `scheduled()` tick of the worker; its metrics are the `deferred_sweep` log line it prints. */
async function tick(): Promise<SweepMetrics> {
  const lines: string[] = [];
  const log = console.log;
  console.log = (line: unknown) => lines.push(String(line));
  try {
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
  } finally {
    console.log = log;
  }
  const line = lines.map((text) => JSON.parse(text)).find((entry) => entry.event === "deferred_sweep");
  if (!line) throw new Error("the tick logged no deferred_sweep line");
  return line;
}

async function indexSize(): Promise<number> {
  let total = 0;
  for (let index = 0; index < DEFERRED_INDEX_SHARDS; index++) total += await env.DEFERRED_INDEX.getByName(shardName(index)).size();
  return total;
}

async function tenantForMany(prefix: string): Promise<{ tenantId: string; key: string }> {
  const tenant = await newTenant(prefix);
  const quotas = await call(`/v1/admin/tenants/${tenant.tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: COUNT, requestsPerMinute: 100_000 }, token: adminToken() });
  expect(quotas.status).toBe(200);
  return tenant;
}

/** A session whose lane runs `scripted/script` and whose one script step answers deferred; prompted until suspended. */
async function suspendedRun(tenant: { tenantId: string; key: string }, index: number): Promise<Run> {
  const sid = `s_scale_${index}`;
  const created = await call("/v1/sessions", { body: { id: sid, settings: { defaultModel: SCRIPT } }, token: tenant.key });
  expect(created.status).toBe(201);
  expect((await call(`/v1/sessions/${sid}/lanes/main`, { method: "PUT", token: tenant.key })).status).toBe(201);
  await runInDurableObject(env.SESSIONS.getByName(`${tenant.tenantId}:${sid}`), (instance: SessionObject) =>
    appendScriptSteps(instance.session(), [{ deferred: { ready: { text: `answer ${index}` } } }]),
  );
  const answer = await (await call(`/v1/sessions/${sid}/lanes/main/prompt`, { body: { prompt: "later", wait: 30 }, token: tenant.key })).json<{ status: string; operationId: string }>();
  expect(answer.status).toBe("suspended");
  return { sid, tenantId: tenant.tenantId, operationId: answer.operationId };
}

function tenantOf<T>(tenants: readonly T[], index: number): T {
  const tenant = tenants[index % tenants.length];
  if (tenant === undefined) throw new Error("no tenant");
  return tenant;
}

/** The run's result status and the stop reasons of its branch's assistant entries, read in its object. */
async function outcomeOf(run: Run): Promise<{ status: string | undefined; stops: string[] }> {
  return runInDurableObject(env.SESSIONS.getByName(`${run.tenantId}:${run.sid}`), async (instance: SessionObject) => {
    const lane = (await instance.harness()).getLane("main");
    const stops = instance.session().findEntries({ order: "asc" }).flatMap((entry) => (entry.type === "message" && entry.message.role === "assistant" ? [entry.message.stopReason] : []));
    return { status: lane?.getResult(run.operationId)?.status, stops };
  });
}

describe("the deferred sweep at full size", { timeout: 900_000 }, () => {
  it("resumes 1,000 suspended runs by successive ticks, within the per-shard bound, each exactly once", async () => {
    const tenants = await Promise.all(Array.from({ length: TENANTS }, (_, index) => tenantForMany(`scale${index}`)));
    const before = await indexSize();
    const runs: Run[] = [];
    for (let start = 0; start < COUNT; start += SEEDING_IN_FLIGHT) {
      const batch = Array.from({ length: Math.min(SEEDING_IN_FLIGHT, COUNT - start) }, (_, offset) => start + offset);
      runs.push(...(await Promise.all(batch.map((index) => suspendedRun(tenantOf(tenants, index), index)))));
    }
    for (let attempt = 0; attempt < 400 && (await indexSize()) < before + COUNT; attempt++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(await indexSize()).toBeGreaterThanOrEqual(before + COUNT);

    // The index is the deployment's: test files running beside this one may register runs of their
    // own (swept here too) or tick the cron themselves (sweeping some of these). So the ticks run
    // until one finds nothing due, and exactly-once is checked on each of these runs' branches.
    const perTick: number[] = [];
    while (perTick.length < 40) {
      const metrics = await tick();
      expect(metrics.failed).toBe(0);
      expect(metrics.resumed).toBeLessThanOrEqual(SWEEP_PER_SHARD * DEFERRED_INDEX_SHARDS);
      perTick.push(metrics.resumed);
      if (metrics.resumed === 0) break;
    }
    // More were due than one tick may take: the first tick took its whole bound (every shard holds
    // far more than one tick's share of 1,000 runs), and the rest took further ticks.
    expect(perTick[0]).toBe(SWEEP_PER_SHARD * DEFERRED_INDEX_SHARDS);
    expect(perTick.filter((resumed) => resumed > 0).length).toBeGreaterThanOrEqual(2);
    for (const run of runs) {
      let outcome = await outcomeOf(run);
      for (let attempt = 0; attempt < 200 && outcome.status === undefined; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        outcome = await outcomeOf(run);
      }
      expect(outcome).toEqual({ status: "completed", stops: ["deferred", "stop"] });
    }
  });
});
