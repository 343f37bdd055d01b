import { describe, expect, it } from "vitest";
import { adminToken, call, newTenant } from "./helpers.ts";
import { recordCalls, warmCalls } from "./tenant-calls.ts";

// QUALITY P13: the tenant object's calls per request on a warm isolate (the key verified less than
// KEY_TRUST_MS ago, a quota lease held): none for authentication and the request quota; exactly one
// for a route whose data the tenant object owns; at most one per accepted operation (its
// open-operation reservation), plus the settlement forward after the answer.

async function tenantWithSession(prefix: string): Promise<{ tenantId: string; key: string; sessionPath: string }> {
  const { tenantId, key } = await newTenant(prefix);
  const sessionPath = `/v1/sessions/s_${prefix}`;
  expect((await call("/v1/sessions", { body: { id: `s_${prefix}` }, token: key })).status).toBe(201);
  expect((await call(`${sessionPath}/lanes/main`, { method: "PUT", token: key })).status).toBe(201);
  return { tenantId, key, sessionPath };
}

const ok = async (path: string, key: string, init: { method?: string; body?: unknown } = {}): Promise<void> => {
  const response = await call(path, { ...init, token: key });
  expect(response.status).toBeLessThan(300);
};

describe("tenant-object calls per request on a warm isolate (P13)", () => {
  it("a session's own routes make none: the key is trusted here and the request spent from a lease", async () => {
    const { tenantId, key, sessionPath } = await tenantWithSession("p13_read");
    const calls = await warmCalls(
      tenantId,
      () => ok(sessionPath, key),
      async () => {
        await ok(sessionPath, key);
        await ok(`${sessionPath}/lanes/main`, key);
        await ok(`${sessionPath}/lanes`, key);
      },
    );
    expect(calls).toEqual([]);
  });

  it("a route whose data the tenant object owns makes exactly its data call", async () => {
    const { tenantId, key } = await newTenant("p13_owned");
    const owned: [string, string][] = [
      ["/v1/agents", "listAgents"],
      ["/v1/tools", "listTenantTools"],
      ["/v1/webhooks", "listWebhooks"],
      ["/v1/sessions", "searchSessions"],
    ];
    for (const [path, dataCall] of owned) {
      expect(await warmCalls(tenantId, () => ok(path, key), () => ok(path, key))).toEqual([dataCall]);
    }
  });

  it("a prompt makes one call on its path (the reservation, which checks the key) and the settlement forward after it", async () => {
    const { tenantId, key, sessionPath } = await tenantWithSession("p13_prompt");
    const calls = await warmCalls(
      tenantId,
      () => ok(sessionPath, key),
      () => ok(`${sessionPath}/lanes/main/prompt`, key, { method: "POST", body: { prompt: "hello" } }),
      (names) => names.includes("operationsSettled"),
    );
    expect(calls).toEqual(["authorizeAndReserve", "operationsSettled"]);
  });

  it("a cold isolate (no lease held, the key not trusted yet) asks once: the key and a lease in one call", async () => {
    const { tenantId, sessionPath } = await tenantWithSession("p13_cold");
    // A new key of the tenant is unknown to this isolate; a quota change through it drops the tenant's lease.
    const created = await call(`/v1/admin/tenants/${tenantId}/keys`, { body: { name: "cold" }, token: adminToken() });
    const { key } = await created.json<{ key: string }>();
    expect((await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { requestsPerMinute: 1_000 }, token: adminToken() })).status).toBe(200);
    const recorder = await recordCalls(tenantId);
    await ok(sessionPath, key);
    const calls = await recorder.read();
    await recorder.stop();
    expect(calls).toEqual(["authorizeLease"]);
  });
});
