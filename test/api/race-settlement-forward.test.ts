import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { adminToken, call, errorCode, newTenant } from "./helpers.ts";
import { order, signalsReturn, waitsFor } from "./race-helpers.ts";

// Race between objects (QUALITY R2): a settled operation's forward to the TenantObject (it frees
// the open-operation slot and adds the usage) against the tenant's open-operation state changing
// under it, here a second prompt's reservation, with maxOpenOperations 1. The two TenantObject calls
// are ordered by wrapping them (race-helpers.ts), never by timing.

let restore: (() => Promise<void>) | undefined;
afterEach(async () => {
  await restore?.();
  restore = undefined;
});

async function tenantWithTwoSessions(prefix: string) {
  const { tenantId, key } = await newTenant(prefix);
  const quota = await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 1 }, token: adminToken() });
  expect(quota.status).toBe(200);
  const sessions = [`${prefix}_one`, `${prefix}_two`];
  for (const id of sessions) {
    expect((await call("/v1/sessions", { body: { id }, token: key })).status).toBe(201);
    expect((await call(`/v1/sessions/${id}/lanes/main`, { method: "PUT", token: key })).status).toBe(201);
  }
  const prompt = (sid: string, text: string) => call(`/v1/sessions/${sid}/lanes/main/prompt`, { body: { prompt: text, wait: 10 }, token: key });
  return { tenantId, key, first: sessions[0] ?? "", second: sessions[1] ?? "", prompt };
}

/** The tenant's open-operation count once every forward landed (bounded polling: forwards run after the answer). */
async function openCountSettles(tenantId: string): Promise<number> {
  const tenant = env.TENANTS.getByName(tenantId);
  let open = await tenant.openOperationCount();
  for (let i = 0; i < 200 && open > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    open = await tenant.openOperationCount();
  }
  return open;
}

/** The tenant's usage totals equal the sum of its two sessions' ledgers once the forwards landed (bounded polling). */
async function expectUsageCountedOnce(setup: { key: string; first: string; second: string }): Promise<void> {
  const tokens = async (path: string) => (await (await call(path, { token: setup.key })).json<{ usage?: { totalTokens: number }; stats?: { usage: { totalTokens: number } } }>());
  const ledgers = (await tokens(`/v1/sessions/${setup.first}`)).stats?.usage.totalTokens ?? 0;
  const sum = ledgers + ((await tokens(`/v1/sessions/${setup.second}`)).stats?.usage.totalTokens ?? 0);
  expect(sum).toBeGreaterThan(0);
  let total = (await tokens("/v1/me")).usage?.totalTokens;
  for (let i = 0; i < 200 && total !== sum; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    total = (await tokens("/v1/me")).usage?.totalTokens;
  }
  expect(total).toBe(sum);
}

const isSession = (sid: string, index: number) => (args: unknown[]) => args[index] === sid;

describe("race: settlement forward vs tenant (a second prompt's reservation)", () => {
  it("the forward first: the slot is free when the second prompt reserves, so it runs; nothing stays open", async () => {
    const setup = await tenantWithTwoSessions("rsf_fwd");
    const tenant = env.TENANTS.getByName(setup.tenantId);
    ({ restore } = await order([
      {
        stub: tenant,
        methods: {
          operationsSettled: async (run, args, points) => (isSession(setup.first, 0)(args) ? signalsReturn("forwarded")(run, args, points) : run()),
          authorizeAndReserve: async (run, args, points) => (isSession(setup.second, 1)(args) ? waitsFor("forwarded")(run, args, points) : run()),
        },
      },
    ]));
    const first = await setup.prompt(setup.first, "one");
    expect(first.status).toBe(200);
    const second = await setup.prompt(setup.second, "two");
    expect({ status: second.status, body: await second.json() }).toMatchObject({ status: 200, body: { status: "completed" } });
    expect(await openCountSettles(setup.tenantId)).toBe(0);
    await expectUsageCountedOnce(setup);
  });

  it("the reservation first: the settled operation's slot still counts until its forward lands (the heal finds no stale row for a reservation held in memory), so the second prompt is 429 and writes nothing; once the forward lands it runs, and the usage is counted once", async () => {
    const setup = await tenantWithTwoSessions("rsf_rsv");
    const firstTries: string[] = [];
    const tenant = env.TENANTS.getByName(setup.tenantId);
    ({ restore } = await order([
      {
        stub: tenant,
        methods: {
          authorizeAndReserve: async (run, args) => {
            const answer = await run();
            if (isSession(setup.second, 1)(args)) firstTries.push(JSON.stringify(answer));
            return answer;
          },
          // The retry after the heal (worker/routes/open-operations.ts) reserves the slot; only then the forward.
          reserveOperation: async (run, args, points) => (isSession(setup.second, 0)(args) ? signalsReturn("reserved")(run, args, points) : run()),
          operationsSettled: async (run, args, points) => (isSession(setup.first, 0)(args) ? waitsFor("reserved")(run, args, points) : run()),
        },
      },
    ]));
    const first = await setup.prompt(setup.first, "one");
    expect({ status: first.status, body: await first.json() }).toMatchObject({ status: 200, body: { status: "completed" } });
    const refused = await setup.prompt(setup.second, "two");
    expect({ status: refused.status, code: await errorCode(refused), retryAfter: refused.headers.get("retry-after") }).toEqual({ status: 429, code: "RateLimited", retryAfter: expect.stringMatching(/^\d+$/) });
    // Refused at the first try and at the retry after the heal: nothing of it was written.
    expect(firstTries.map((answer) => JSON.parse(answer).reservation.ok)).toEqual([false]);
    const lane = await (await call(`/v1/sessions/${setup.second}/lanes/main`, { token: setup.key })).json<{ tipId: string | null; current?: unknown }>();
    expect({ tipId: lane.tipId, current: lane.current ?? null }).toEqual({ tipId: null, current: null });
    expect(await openCountSettles(setup.tenantId)).toBe(0);
    const second = await setup.prompt(setup.second, "two");
    expect({ status: second.status, body: await second.json() }).toMatchObject({ status: 200, body: { status: "completed" } });
    expect(await openCountSettles(setup.tenantId)).toBe(0);
    await expectUsageCountedOnce(setup);
  });
});
