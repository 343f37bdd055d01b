import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MIN_ADMIN_TOKEN_CHARS } from "../../worker/admin-token.ts";
import { createApp } from "../../worker/app.ts";
import { adminToken, call, errorCode, newTenant, untilRefused } from "./helpers.ts";
import { expectError } from "./session-helpers.ts";

// The admin token: wrong tokens are limited like wrong tenant keys (per source address through the
// real rate limiting binding; the admin's own count through the app with a limiter that counts by
// key, since exhausting the pool's shared admin count would refuse every other test file's admin),
// and a deployment whose ADMIN_TOKEN is missing or shorter than 32 characters serves no admin
// route: the real app with such an environment answers 503 NotConfigured saying why.

const app = createApp();
let counter = 0;
const wrongToken = (): string => `adm_wrong_${Date.now().toString(36)}_${(counter++).toString(36)}_${"x".repeat(24)}`;

/** A request to the real app with `overrides` over the test pool's environment. */
async function fetchWith(overrides: Partial<Env>, path: string, init: RequestInit = {}): Promise<Response> {
  return app.fetch(new Request(`http://api.test${path}`, init), { ...env, ...overrides }, createExecutionContext());
}

describe("failed admin authentications are limited like tenant keys", () => {
  it("per source: past the limit a source's wrong admin tokens are 429 with Retry-After; the real token still works", async () => {
    const source = `198.51.100.${Math.floor(Math.random() * 250)}`;
    const headers = { "cf-connecting-ip": source };
    // The real token authenticates first: proven in this isolate, it is not counted again.
    expect((await call("/v1/admin/tenants?limit=1", { token: adminToken(), headers })).status).toBe(200);
    const { before, refused } = await untilRefused(() => call("/v1/admin/tenants", { token: wrongToken(), headers }), 130);
    expect(before.length).toBeGreaterThanOrEqual(59);
    expect(before.every((status) => status === 401)).toBe(true);
    expect(refused.headers.get("retry-after")).toBe("60");
    expect(await errorCode(refused)).toBe("RateLimited");
    // This isolate has seen the real token succeed: the operator keeps working while the source is refused.
    expect((await call("/v1/admin/tenants?limit=1", { token: adminToken(), headers })).status).toBe(200);
    // Another source is not affected.
    await expectError(await call("/v1/admin/tenants", { token: wrongToken(), headers: { "cf-connecting-ip": "203.0.113.77" } }), 401, "Unauthenticated");
  });

  it("per admin: wrong tokens from many sources count against the admin's own limit, as a tenant's keys do", async () => {
    const counts = new Map<string, number>();
    const counting = (limit: number): RateLimit => ({
      async limit({ key }: RateLimitOptions): Promise<RateLimitOutcome> {
        const count = (counts.get(key) ?? 0) + 1;
        counts.set(key, count);
        return { success: count <= limit };
      },
    });
    const limits = { AUTH_SOURCE_LIMIT: counting(1000), AUTH_TENANT_LIMIT: counting(3) };
    const attempt = (source: number) =>
      fetchWith(limits, "/v1/admin/tenants", { headers: { authorization: `Bearer ${wrongToken()}`, "cf-connecting-ip": `192.0.2.${source}` } });
    const statuses = [];
    for (let source = 1; source <= 5; source++) statuses.push((await attempt(source)).status);
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    expect(counts.get("admin")).toBe(5);
    // Never under a tenant's key: a tenant named "admin" has a count of its own.
    expect([...counts.keys()].filter((key) => key.startsWith("tenant:"))).toEqual([]);
    // A missing token names nothing and counts against nothing.
    expect((await fetchWith(limits, "/v1/admin/tenants")).status).toBe(401);
    expect(counts.get("admin")).toBe(5);
  });
});

describe("a refused admin token says why", () => {
  it("a missing token is required; a wrong one is not the service's ADMIN_TOKEN", async () => {
    const missing = await call("/v1/admin/tenants", { headers: { "cf-connecting-ip": "203.0.113.91" } });
    const wrong = await call("/v1/admin/tenants", { token: wrongToken(), headers: { "cf-connecting-ip": "203.0.113.92" } });
    const messages = [await missing.json<{ error: { message: string } }>(), await wrong.json<{ error: { message: string } }>()].map((body) => body.error.message);
    expect({ statuses: [missing.status, wrong.status], messages }).toEqual({
      statuses: [401, 401],
      messages: ["The admin token is required", "The admin token is not this service's ADMIN_TOKEN"],
    });
  });
});

describe(`an ADMIN_TOKEN shorter than ${MIN_ADMIN_TOKEN_CHARS} characters`, () => {
  it("is long enough in the test configuration", () => {
    expect(adminToken().length).toBeGreaterThanOrEqual(MIN_ADMIN_TOKEN_CHARS);
  });

  for (const [label, token] of [["missing", undefined], ["empty", ""], ["short", "short-admin-token"], ["31 characters", "a".repeat(MIN_ADMIN_TOKEN_CHARS - 1)]] as const) {
    it(`(${label}) makes every admin route 503 NotConfigured saying why, even with that very token; tenant routes still work`, async () => {
      const overrides = { ADMIN_TOKEN: token };
      const authorization = { authorization: `Bearer ${token ?? "anything"}` };
      const requests: [string, RequestInit][] = [
        ["/v1/admin/tenants", { headers: authorization }],
        ["/v1/admin/tenants", { method: "POST", headers: { ...authorization, "content-type": "application/json" }, body: JSON.stringify({ id: `never_${counter++}` }) }],
        ["/v1/admin/tenants/acme/keys", { headers: authorization }],
        ["/v1/admin/tenants/acme/quotas", { headers: {} }],
      ];
      for (const [path, init] of requests) {
        const response = await fetchWith(overrides, path, init);
        expect({ path, status: response.status }).toEqual({ path, status: 503 });
        const body = await response.json<{ error: { code: string; message: string; details?: unknown } }>();
        expect(body.error.code).toBe("NotConfigured");
        expect(body.error.message).toMatch(token ? /ADMIN_TOKEN is shorter than 32 characters/ : /no ADMIN_TOKEN configured/);
        expect(body.error.details).toEqual({ secret: "ADMIN_TOKEN" });
      }
      const tenant = await newTenant("shortadmin");
      expect((await fetchWith(overrides, "/v1/me", { headers: { authorization: `Bearer ${tenant.key}` } })).status).toBe(200);
      expect((await fetchWith(overrides, "/health")).status).toBe(200);
    });
  }
});
