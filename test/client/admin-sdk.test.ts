import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ApiRequestError, createClient } from "../../client/index.ts";
import type { KeyInfo } from "../../client/admin.ts";
import { adminToken } from "../api/helpers.ts";

// The SDK's admin listings against the real app in workerd.

const client = () => createClient({ baseUrl: "http://api.test/", adminToken: adminToken(), fetch: (input, init) => exports.default.fetch(input, init) });

describe("client.admin listings", () => {
  it("lists tenants and a tenant's keys (never a secret), and a key creation replay names the key", async () => {
    const admin = client().admin;
    const id = `sdk_admin_${Date.now().toString(36)}`;
    await admin.createTenant({ id, name: "SDK" });
    const created = await admin.createKey(id, { name: "first" }, { idempotencyKey: `sdk-${id}` });
    const tenants: string[] = [];
    for await (const tenant of admin.allTenants({ limit: 3 })) tenants.push(tenant.id);
    expect(tenants).toContain(id);
    const keys: KeyInfo[] = [];
    for await (const key of admin.allKeys(id)) keys.push(key);
    expect(keys).toEqual([{ keyId: created.keyId, name: "first", createdAt: expect.any(Number) }]);
    expect(JSON.stringify(await admin.listKeys(id))).not.toContain(created.key);
    const replay = await admin.createKey(id, { name: "first" }, { idempotencyKey: `sdk-${id}` }).catch((error: unknown) => error);
    expect(replay).toBeInstanceOf(ApiRequestError);
    expect(replay).toMatchObject({ status: 409, code: "KeySecretNotReplayed", details: { keyId: created.keyId } });
  });

  it("reads and sets a tenant's quotas; a bad value is a 400 and changes nothing", async () => {
    const admin = client().admin;
    const id = `sdk_quotas_${Date.now().toString(36)}`;
    await admin.createTenant({ id });
    const defaults = await admin.quotas(id);
    expect(defaults).toEqual({ requestsPerMinute: expect.any(Number), maxOpenOperations: expect.any(Number), maxSchedules: expect.any(Number), deploymentKeys: true, sessionRetentionDays: null });
    expect(await admin.setQuotas(id, { maxOpenOperations: 7 })).toEqual({ ...defaults, maxOpenOperations: 7 });
    const refused = await admin.setQuotas(id, { requestsPerMinute: 0 }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 400, code: "ValidationFailed" });
    expect(await admin.quotas(id)).toEqual({ ...defaults, maxOpenOperations: 7 });
  });

  it("deletes one end user's sessions by metadata, and a tenant, following its progress until 404", async () => {
    const admin = client().admin;
    const id = `sdk_delete_${Date.now().toString(36)}`;
    await admin.createTenant({ id });
    const { key } = await admin.createKey(id);
    const tenant = createClient({ baseUrl: "http://api.test/", key, fetch: (input, init) => exports.default.fetch(input, init) });
    await tenant.sessions.create({ id: "mine", metadata: { user: "u_1" } });
    await tenant.sessions.create({ id: "theirs", metadata: { user: "u_2" } });
    expect(await tenant.sessions.deleteByMetadata({ user: "u_1" })).toEqual({ matched: 1 });
    expect((await tenant.sessions.list()).items.map((session) => session.id)).toEqual(["theirs"]);
    expect(await admin.setQuotas(id, { sessionRetentionDays: 90 })).toMatchObject({ sessionRetentionDays: 90 });

    expect(await admin.tenant(id)).toMatchObject({ id, status: "active" });
    expect(await admin.deleteTenant(id)).toMatchObject({ id, status: "deleting", deletion: { sessionsTotal: expect.any(Number) } });
    expect(await admin.tenant(id)).toMatchObject({ status: "deleting" });
    expect(await tenant.sessions.list().catch((error: unknown) => error)).toMatchObject({ status: 401 });
  });
});
