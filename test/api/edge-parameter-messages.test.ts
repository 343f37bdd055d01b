import { describe, expect, it } from "vitest";
import { adminToken, call, newTenant } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// Every route's refusal of a path or query parameter names that parameter (`tenantId: …`,
// `lane: …`), never `body: …`: admin routes, watch upgrades and the idempotency check that runs
// before a creating POST included. And a browser can read `Allow` on a 405 (CORS exposes it).

type ErrorBody = { error: { code: string; message: string } };

async function refusal(response: Response): Promise<{ status: number; code: string; message: string }> {
  const body = await response.json<ErrorBody>();
  return { status: response.status, code: body.error.code, message: body.error.message };
}

async function expectNamed(label: string, response: Response, parameter: string): Promise<void> {
  const found = await refusal(response);
  expect({ label, status: found.status, code: found.code, message: found.message, names: found.message.startsWith(`${parameter}: `) }).toEqual({
    label,
    status: 400,
    code: "ValidationFailed",
    message: found.message,
    names: true,
  });
}

describe("path and query parameter messages", () => {
  it("admin routes name tenantId, keyId and the query parameter", async () => {
    const admin = adminToken();
    const { tenantId } = await newTenant("adminparams");
    await expectNamed("keys", await call("/v1/admin/tenants/bad:id/keys", { token: admin }), "tenantId");
    await expectNamed("create key", await call("/v1/admin/tenants/bad:id/keys", { body: {}, token: admin }), "tenantId");
    await expectNamed("quotas", await call("/v1/admin/tenants/bad:id/quotas", { token: admin }), "tenantId");
    await expectNamed("set quotas", await call("/v1/admin/tenants/bad:id/quotas", { method: "PATCH", body: { requestsPerMinute: 5 }, token: admin }), "tenantId");
    await expectNamed("revoke", await call(`/v1/admin/tenants/${tenantId}/keys/bad:key`, { method: "DELETE", token: admin }), "keyId");
    await expectNamed("tenant listing", await call("/v1/admin/tenants?limit=0", { token: admin }), "limit");
    await expectNamed("key listing", await call(`/v1/admin/tenants/${tenantId}/keys?limit=x`, { token: admin }), "limit");
  });

  it("watch upgrades name sid and lane", async () => {
    const setup = await laneSetup("watchparams");
    const upgrade = { upgrade: "websocket" };
    await expectNamed("session watch", await call("/v1/sessions/bad:id/watch", { token: setup.key, headers: upgrade }), "sid");
    await expectNamed("lane watch sid", await call("/v1/sessions/bad:id/lanes/main/watch", { token: setup.key, headers: upgrade }), "sid");
    await expectNamed("lane watch lane", await call(`${setup.sessionPath}/lanes/bad:lane/watch`, { token: setup.key, headers: upgrade }), "lane");
  });

  it("a creating POST with an Idempotency-Key names the path parameter it refuses", async () => {
    const setup = await laneSetup("idemparams");
    const headers = { "idempotency-key": "k-1" };
    await expectNamed("branch", await call("/v1/sessions/bad:id/branches", { body: { name: "b" }, token: setup.key, headers }), "sid");
    await expectNamed("lane entry", await call(`${setup.sessionPath}/lanes/bad:lane/entries`, { body: { customType: "x" }, token: setup.key, headers }), "lane");
    await expectNamed("admin key", await call("/v1/admin/tenants/bad:id/keys", { body: {}, token: adminToken(), headers }), "tenantId");
  });
});

describe("CORS", () => {
  it("exposes Allow, so a browser reads which methods a 405 offers", async () => {
    const setup = await laneSetup("corsallow");
    const response = await call(`${setup.sessionPath}/entries`, { method: "DELETE", token: setup.key, headers: { origin: "https://app.example" } });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, HEAD");
    const exposed = (response.headers.get("access-control-expose-headers") ?? "").split(",").map((name) => name.trim().toLowerCase());
    expect(exposed).toContain("allow");
  });
});
