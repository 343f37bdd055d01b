import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { adminToken, call } from "./helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";

// docs/data.md "Retention": "A session with an operation open (a run still answering) is never
// idle: the sweep passes it by". A prompt sent with `POST …/prompt` (accept and wait) is such an
// open operation while its model answers, whether the tenant's ledger holds it in a row or only in
// memory (its reservation taken over by the session), and also after the tenant object restarted
// and forgot what it held in memory: the session itself refuses a retention deletion while an
// operation is open.

const DAY_MS = 86_400_000;

/**
 * A session idle for three days under a one-day retention, whose end user comes back and prompts,
 * waiting for the answer: resolves once the run is answering (the prompt's answer still to come).
 */
async function cameBackAndPrompting(prefix: string) {
  const setup = await laneSetup(prefix);
  expect((await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { sessionRetentionDays: 1 }, token: adminToken() })).status).toBe(200);
  const tenant = env.TENANTS.getByName(setup.tenantId);
  await useScript(setup, [slowStep(150)]);
  await runInDurableObject(tenant, (_instance: TenantObject, state) => {
    state.storage.sql.exec("UPDATE sessions SET last_active_at = ? WHERE session_id = ?", Date.now() - 3 * DAY_MS, setup.sid);
  });
  const prompt = call(`${setup.lanePath}/prompt`, { body: { prompt: "are you there?", wait: 30 }, token: setup.key });
  await untilAt(setup, "assistant.effect_pending");
  return { setup, tenant, prompt };
}

describe("retention and a run accepted by POST …/prompt", { timeout: 60_000 }, () => {
  it("the sweep passes by a session whose prompt is still answering", async () => {
    const { setup, tenant, prompt } = await cameBackAndPrompting("ret_prompt");
    // The ledger knows the run is open: a search by status says so.
    const active = await (await call("/v1/sessions?status=active", { token: setup.key })).json<{ items: { id: string }[] }>();
    expect(active.items.map((item) => item.id)).toEqual([setup.sid]);

    const { queued } = await tenant.sweepRetention(Date.now());
    const session = (await call(setup.sessionPath, { token: setup.key })).status;
    const answered = await prompt;
    const body = await answered.text();
    expect({ queued, session, prompt: answered.status }, body.slice(0, 300)).toEqual({ queued: 0, session: 200, prompt: 200 });
  });

  it("a tenant object restarted meanwhile queues it, and the deletion tick keeps it: the session says it is busy", async () => {
    const { setup, tenant, prompt } = await cameBackAndPrompting("ret_prompt_restart");
    // The tenant object forgets the reservation it held in memory.
    await evictDurableObject(tenant);
    await tenant.sweepRetention(Date.now());
    const session = (await call(setup.sessionPath, { token: setup.key })).status;
    const answered = await prompt;
    const queuedAfter = await runInDurableObject(tenant, (_instance: TenantObject, state) =>
      state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM session_deletions WHERE session_id = ?", setup.sid).one().n,
    );
    expect({ session, prompt: answered.status, queuedAfter }, (await answered.text()).slice(0, 300)).toEqual({ session: 200, prompt: 200, queuedAfter: 0 });
  });
});
