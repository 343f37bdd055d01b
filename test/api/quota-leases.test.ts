import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex, type TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { LEASE_MAX, leaseSize, QuotaLeases, WINDOW_MS, windowStartOf } from "../../durable-objects/tenant/quota-leases.ts";
import { adminToken, call, errorCode, newTenant } from "./helpers.ts";

// The per-minute request quota spent through leases (durable-objects/tenant/quota-leases.ts,
// request-window.ts): through the real app for a small quota, and, for many isolates, with one
// QuotaLeases per simulated isolate against the real TenantObject and an injected clock (`now`).

async function quotaTenant(prefix: string, requestsPerMinute: number) {
  const { tenantId, key } = await newTenant(prefix);
  expect((await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { requestsPerMinute }, token: adminToken() })).status).toBe(200);
  // The start of the next minute: no other request of the test counts in it.
  return { tenantId, key, hash: await sha256Hex(key), minute: windowStartOf(Date.now()) + WINDOW_MS };
}

const savedWindow = (tenantId: string) =>
  runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) =>
    state.storage.sql.exec<{ window_start: number; count: number }>("SELECT window_start, count FROM request_window").toArray(),
  );

/** One isolate of the front worker, simulated: its own leases, and the tenant object asked when none is left (as worker/middleware/auth.ts does). */
class Isolate {
  readonly leases = new QuotaLeases();
  admitted = 0;

  constructor(
    private readonly tenantId: string,
    private readonly hash: string,
    /** How far this isolate's clock is from the object's. */
    private readonly skewMs = 0,
  ) {}

  async request(now: number): Promise<boolean> {
    if (this.leases.spend(this.tenantId, now + this.skewMs)) return this.admit();
    const verdict = await env.TENANTS.getByName(this.tenantId).authorizeLease(this.hash, LEASE_MAX, now);
    if (!verdict) throw new Error("the key must verify");
    if (verdict.limited) return false;
    this.leases.hold(this.tenantId, verdict.windowStart, verdict.granted - 1);
    return this.admit();
  }

  private admit(): true {
    this.admitted += 1;
    return true;
  }
}

/** Sends requests round the isolates at `now` until every one of them is refused; the admitted count. */
async function drain(isolates: Isolate[], now: number, atMost = Infinity): Promise<number> {
  let sent = 0;
  const refused = new Set<Isolate>();
  while (refused.size < isolates.length && sent < atMost) {
    for (const isolate of isolates) {
      if (sent >= atMost) break;
      sent += 1;
      if (!(await isolate.request(now))) refused.add(isolate);
    }
  }
  return isolates.reduce((sum, isolate) => sum + isolate.admitted, 0);
}

/** Runs `attempt` again (with a fresh tenant) when a minute boundary fell inside it: its requests must share one window. */
async function inOneMinute<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 0; ; tries++) {
    const start = windowStartOf(Date.now());
    const result = await attempt();
    if (windowStartOf(Date.now()) === start || tries === 3) return result;
  }
}

describe("a holder's leases", () => {
  it("spends a lease in its minute only, adds a grant of the same minute, and keeps no late grant of an older one", () => {
    const leases = new QuotaLeases();
    const minute = 1_700_000_040_000;
    leases.hold("acme", minute, 2);
    leases.hold("acme", minute, 1);
    expect([leases.spend("acme", minute + 1), leases.spend("acme", minute + 2), leases.spend("acme", minute + 3), leases.spend("acme", minute + 4)]).toEqual([true, true, true, false]);
    leases.hold("acme", minute, 5);
    // Expired with its minute, and forgotten.
    expect(leases.spend("acme", minute + WINDOW_MS)).toBe(false);
    expect(leases.spend("acme", minute + 1)).toBe(false);
    leases.hold("acme", minute + WINDOW_MS, 1);
    leases.hold("acme", minute, 5);
    expect([leases.spend("acme", minute + WINDOW_MS), leases.spend("acme", minute + WINDOW_MS)]).toEqual([true, false]);
    leases.hold("acme", minute + WINDOW_MS, 3);
    leases.drop("acme");
    expect(leases.spend("acme", minute + WINDOW_MS)).toBe(false);
  });
});

describe("request-quota leases", () => {
  it("a tenant with 5 requests a minute gets exactly 5 through the API, then 429 RateLimited with Retry-After", async () => {
    const { statuses, limited } = await inOneMinute(async () => {
      const { key } = await quotaTenant("lease_small", 5);
      const answers: Response[] = [];
      for (let i = 0; i < 7; i++) answers.push(await call("/v1/sessions", { token: key }));
      return { statuses: answers.map((response) => response.status), limited: answers[5] };
    });
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    expect(limited?.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await errorCode(limited ?? new Response("{}"))).toBe("RateLimited");
  });

  it("a quota lowered through this isolate applies here at once: the lease taken under the old one is dropped", async () => {
    const status = await inOneMinute(async () => {
      const { tenantId, key } = await newTenant("lease_lower");
      expect((await call("/v1/sessions", { token: key })).status).toBe(200);
      expect((await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { requestsPerMinute: 1 }, token: adminToken() })).status).toBe(200);
      return (await call("/v1/sessions", { token: key })).status;
    });
    expect(status).toBe(429);
  });

  it("grants shrink with what remains and are counted and saved when granted: one write per lease, exact at the quota", async () => {
    const { tenantId, hash, minute } = await quotaTenant("lease_sizes", 100);
    const tenant = env.TENANTS.getByName(tenantId);
    const granted: number[] = [];
    const saved: number[] = [];
    for (;;) {
      const verdict = await tenant.authorizeLease(hash, LEASE_MAX, minute + 1_000);
      if (!verdict || verdict.limited) break;
      granted.push(verdict.granted);
      saved.push((await savedWindow(tenantId))[0]?.count ?? 0);
    }
    const expected: number[] = [];
    for (let remaining = 100; remaining > 0; remaining -= expected.at(-1) ?? 0) expected.push(leaseSize(remaining, LEASE_MAX));
    expect(granted).toEqual(expected);
    expect(granted[0]).toBe(12);
    expect(granted.slice(-13)).toEqual(Array(13).fill(1));
    // Every grant was on disk before its answer, whole.
    expect(saved).toEqual(granted.map((_, i) => granted.slice(0, i + 1).reduce((a, b) => a + b, 0)));
    expect(saved.at(-1)).toBe(100);
    // A key check that asks for nothing (its request paid from a held lease) is not refused and writes nothing.
    expect(await tenant.authorizeLease(hash, 0, minute + 2_000)).toMatchObject({ limited: false, granted: 0, windowStart: minute });
    expect(await tenant.authorizeLease(hash, LEASE_MAX, minute + 59_500)).toMatchObject({ limited: true, retryAfterSeconds: 1 });
    expect(await savedWindow(tenantId)).toEqual([{ window_start: minute, count: 100 }]);
    // The next minute starts over.
    expect(await tenant.authorizeLease(hash, LEASE_MAX, minute + WINDOW_MS)).toMatchObject({ limited: false, granted: 12 });
  });

  it("many isolates sharing a large quota admit all of it in a minute and never more (one clock)", async () => {
    const { tenantId, hash, minute } = await quotaTenant("lease_many", 1_000);
    const isolates = Array.from({ length: 10 }, () => new Isolate(tenantId, hash));
    expect(await drain(isolates, minute + 1_000)).toBe(1_000);
    expect(isolates.every((isolate) => isolate.admitted > 0)).toBe(true);
    // Leases expire with their minute: the next one admits its own quota.
    expect(await drain(isolates, minute + WINDOW_MS + 1_000)).toBe(2_000);
  });

  it("a tenant object that crashes mid-lease loses no accounting: the isolates' leases and the restarted count add up to the quota", async () => {
    const { tenantId, hash, minute } = await quotaTenant("lease_crash", 300);
    const isolates = Array.from({ length: 6 }, () => new Isolate(tenantId, hash));
    const before = await drain(isolates, minute + 1_000, 120);
    expect(before).toBe(120);
    await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => state.abort("crashed by the test")).catch(() => undefined);
    expect(await drain(isolates, minute + 2_000)).toBe(300);
  });

  it("an isolate whose clock is behind the object's spends the rest of its last lease in the object's next minute: at most one lease more", async () => {
    const { tenantId, hash, minute } = await quotaTenant("lease_skew", 100);
    const behind = new Isolate(tenantId, hash, -2_000);
    const onTime = new Isolate(tenantId, hash);
    // Near the end of the object's minute the late isolate takes a lease (12 of 100: it spends one).
    expect(await behind.request(minute + 59_000)).toBe(true);
    const nextMinute = minute + WINDOW_MS + 500;
    const inNextMinute = (await drain([onTime], nextMinute)) + (await drain([behind], nextMinute)) - 1;
    expect(onTime.admitted).toBe(100);
    expect(inNextMinute).toBe(100 + 11);
    expect(inNextMinute - 100).toBeLessThanOrEqual(LEASE_MAX);
  });
});
