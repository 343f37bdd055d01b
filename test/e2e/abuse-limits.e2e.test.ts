import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, createTenant, readAdminToken, type ErrorBody } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// What keeps one tenant, or a stranger, from abusing the service, against `npm start` as a
// deployment runs it (LOCAL_DEV off: https only): webhook registration limits and re-enabling,
// the failed-admin-authentication limit, the admin routes of a deployment whose ADMIN_TOKEN is too
// short (503 NotConfigured; and what `npm start` says of such a token in an older .dev.vars), and
// pages no other site may frame. Nothing here makes a delivery: no operation settles, so the https
// endpoints registered are never called.

const SHORT_ADMIN_TOKEN = "short-admin-token";
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * A checkout of this repository whose .dev.vars is `devVars`: every other top-level entry is a
 * link to the real one (so `npm start` there runs this very code), none of its local state.
 */
function checkoutWithDevVars(devVars: string): string {
  const dir = mkdtempSync(join(tmpdir(), "das-checkout-"));
  for (const entry of readdirSync(ROOT)) {
    if (![".dev.vars", ".wrangler", ".git"].includes(entry)) symlinkSync(join(ROOT, entry), join(dir, entry));
  }
  writeFileSync(join(dir, ".dev.vars"), devVars, { mode: 0o600 });
  return dir;
}

describe("abuse limits end to end (LOCAL_DEV off)", () => {
  let server: DevServer;
  let shortToken: DevServer;
  let admin: Api;
  let api: Api;

  beforeAll(async () => {
    // One after the other: the first start may create .dev.vars, and each builds the Inspector's files.
    server = await startDevServer({ extraArgs: ["--var", "LOCAL_DEV:off"] });
    shortToken = await startDevServer({ extraArgs: ["--var", "LOCAL_DEV:off", "--var", `ADMIN_TOKEN:${SHORT_ADMIN_TOKEN}`] });
    admin = new Api(server.baseUrl, readAdminToken());
    api = (await createTenant(admin, "abuse")).api;
  }, 120_000);
  printServerOutputOnFailure(() => [server, shortToken]);
  afterAll(async () => {
    await Promise.all([server?.stop(), shortToken?.stop()]);
  });

  it("webhooks: one endpoint per URL (409 naming it), 3 per host, 10 per tenant; PATCH disables and re-enables", async () => {
    // Local development is off: plain http to loopback is refused.
    const loopback = await api.request<ErrorBody>("POST", "/v1/webhooks", { body: { url: "http://127.0.0.1:9/hook", events: ["operation.settled"] } });
    expect([loopback.status, loopback.body.error.code]).toEqual([422, "InvalidWebhookUrl"]);

    const register = (url: string) => api.request<{ id: string } & ErrorBody>("POST", "/v1/webhooks", { body: { url, events: ["operation.settled"] } });
    const first = await register("https://hooks.example.com/a");
    expect(first.status).toBe(201);
    const again = await register("https://hooks.example.com/a");
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: "WebhookExists", details: { webhookId: first.body.id } });
    expect((await register("https://hooks.example.com/b")).status).toBe(201);
    expect((await register("https://hooks.example.com:8443/c")).status).toBe(201);
    const perHost = await register("https://hooks.example.com/d");
    expect(perHost.status).toBe(422);
    expect(perHost.body.error).toMatchObject({ code: "LimitExceeded", details: { resource: "webhooks_per_host", limit: 3, host: "hooks.example.com" } });
    for (let i = 0; i < 7; i++) expect((await register(`https://hooks-${i}.example.com/a`)).status).toBe(201);
    const perTenant = await register("https://one-more.example.com/a");
    expect(perTenant.body.error).toMatchObject({ code: "LimitExceeded", details: { resource: "webhooks", limit: 10 } });

    const off = await api.expect<{ status: string; disabledReason: string }>(200, "PATCH", `/v1/webhooks/${first.body.id}`, { body: { enabled: false } });
    expect(off).toMatchObject({ status: "disabled", disabledReason: expect.stringContaining("disabled by the tenant") });
    const listed = await api.expect<{ items: { id: string; status: string }[] }>(200, "GET", "/v1/webhooks");
    expect(listed.items.filter((item) => item.status === "disabled").map((item) => item.id)).toEqual([first.body.id]);
    expect(await api.expect(200, "PATCH", `/v1/webhooks/${first.body.id}`, { body: { enabled: true } })).toMatchObject({ status: "enabled" });
    const other = (await createTenant(admin, "abuse-other")).api;
    expect((await other.request<ErrorBody>("PATCH", `/v1/webhooks/${first.body.id}`, { body: { enabled: false } })).status).toBe(404);
  });

  it("/docs and /inspector may not be framed by another site", async () => {
    for (const path of ["/docs", "/inspector"]) {
      const response = await fetch(`${server.baseUrl}${path}`);
      expect({ path, status: response.status }).toEqual({ path, status: 200 });
      expect(response.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
    }
  });

  it("a deployment whose ADMIN_TOKEN is shorter than 32 characters serves no admin route: 503 NotConfigured saying why", async () => {
    const short = new Api(shortToken.baseUrl, SHORT_ADMIN_TOKEN);
    for (const [method, path] of [["GET", "/v1/admin/tenants"], ["POST", "/v1/admin/tenants"]] as const) {
      const refused = await short.request<ErrorBody & { error: { details?: unknown } }>(method, path, method === "POST" ? { body: { id: "never" } } : {});
      expect(refused.status).toBe(503);
      expect(refused.body.error).toMatchObject({ code: "NotConfigured", details: { secret: "ADMIN_TOKEN" } });
      expect(refused.body.error.message).toContain("ADMIN_TOKEN is shorter than 32 characters");
    }
    expect((await fetch(`${shortToken.baseUrl}/health`)).status).toBe(200);
  });

  it("npm start with an old short ADMIN_TOKEN in .dev.vars says so clearly, keeps the file as it is, and its admin routes answer 503", async () => {
    const devVars = `ADMIN_TOKEN=${SHORT_ADMIN_TOKEN}\nSECRETS_KEY=existing-secrets-key-of-at-least-32-chars\nSCRIPTED_MODELS=on\nLOCAL_DEV=on\n`;
    const checkout = checkoutWithDevVars(devVars);
    const old = await startDevServer({ cwd: checkout });
    try {
      const refused = await new Api(old.baseUrl, SHORT_ADMIN_TOKEN).request<ErrorBody>("GET", "/v1/admin/tenants");
      expect([refused.status, refused.body.error.code]).toEqual([503, "NotConfigured"]);
      const warning = "Warning: The ADMIN_TOKEN in .dev.vars has 17 characters; the service refuses every admin route (503 NotConfigured) with a token shorter than 32. Delete the ADMIN_TOKEN line from .dev.vars and run npm start again";
      expect(old.output()).toContain(warning);
      expect(readFileSync(join(checkout, ".dev.vars"), "utf8")).toBe(devVars);
    } finally {
      await old.stop();
      rmSync(checkout, { recursive: true, force: true });
    }
  }, 90_000);

  // Last: it leaves this server's admin limit used up for a minute.
  it("wrong admin tokens are refused 429 with Retry-After past the failed-authentication limit; the operator's token keeps working", async () => {
    await admin.expect(200, "GET", "/v1/admin/tenants?limit=1");
    const statuses: number[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 320 && !refused; i++) {
      const response = await fetch(`${server.baseUrl}/v1/admin/tenants`, { headers: { authorization: `Bearer adm_wrong_guess_number_${i}_xxxxxxxxxxxxxxxx` } });
      if (response.status === 429) refused = response;
      else statuses.push(response.status);
    }
    if (!refused) throw new Error("no 429 within 320 wrong tokens");
    // 60 a minute from one source (this one's earlier first authentications count too), 300 for the admin.
    expect(statuses.length).toBeGreaterThanOrEqual(50);
    expect(new Set(statuses)).toEqual(new Set([401]));
    expect(refused.headers.get("retry-after")).toBe("60");
    expect(((await refused.json()) as ErrorBody).error.code).toBe("RateLimited");
    await admin.expect(200, "GET", "/v1/admin/tenants?limit=1");
  });
});
