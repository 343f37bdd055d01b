import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_TRUST_MS } from "../../worker/middleware/verified-keys.ts";
import { Api, pollUntil, readAdminToken } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { databasesWithOurTables } from "./storage-count.ts";

// Issue 35 "Show" (API.md "Data lifecycle"), against `npm start`: a tenant with 1,000 sessions is
// deleted across many alarm ticks and leaves no object storage; its key is refused within the
// revocation bound; deleting one end user's sessions by metadata leaves the others. Storage is
// counted as databases holding a table of ours (storage-count.ts: the local runtime keeps an
// emptied object's file, with no table in it).

const SESSIONS = 1_000;
const CONCURRENCY = 40;

async function inBatches(count: number, work: (index: number) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < count; start += CONCURRENCY) {
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, count - start) }, (_, offset) => work(start + offset)));
  }
}

describe("issue 35: deleting a tenant's data", () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer();
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
  });
  printServerOutputOnFailure(() => [server]);

  it("deletes one end user's sessions by metadata, then a tenant of 1,000 sessions across ticks, leaving none of its storage", { timeout: 150_000 }, async () => {
    const admin = new Api(server.baseUrl, readAdminToken());
    const tenantId = `tdel_${Date.now().toString(36)}`;
    await admin.expect(201, "POST", "/v1/admin/tenants", { body: { id: tenantId } });
    await admin.expect(200, "PATCH", `/v1/admin/tenants/${tenantId}/quotas`, { body: { requestsPerMinute: 100_000 } });
    const { key } = await admin.expect<{ key: string }>(201, "POST", `/v1/admin/tenants/${tenantId}/keys`, { body: {} });
    const tenant = new Api(server.baseUrl, key);
    // The tenant's own object and the admin directory are counted from here on.
    const before = databasesWithOurTables(server.persistDir).length;

    // Every tenth session is end user u_0's.
    const userOf = (index: number) => `u_${index % 10}`;
    await inBatches(SESSIONS, (index) => tenant.expect(201, "POST", "/v1/sessions", { body: { id: `s_${index}`, metadata: { user: userOf(index) } } }));
    expect(databasesWithOurTables(server.persistDir).length).toBe(before + SESSIONS);

    const byUser = await tenant.expect<{ matched: number }>(202, "DELETE", "/v1/sessions?metadata.user=u_0");
    expect(byUser).toEqual({ matched: SESSIONS / 10 });
    const listed = await tenant.expect<{ items: unknown[] }>(200, "GET", "/v1/sessions?metadata.user=u_0");
    expect(listed.items).toEqual([]);
    await pollUntil("u_0's sessions deleted", async () => databasesWithOurTables(server.persistDir).length, (count) => count === before + SESSIONS - SESSIONS / 10, 60_000);
    for (const index of [0, 10, 990]) expect((await tenant.request("GET", `/v1/sessions/s_${index}`)).status).toBe(404);
    for (const index of [1, 11, 999]) expect((await tenant.request("GET", `/v1/sessions/s_${index}`)).status).toBe(200);

    const accepted = await admin.expect<{ status: string; deletion: { sessionsTotal: number } }>(202, "DELETE", `/v1/admin/tenants/${tenantId}`);
    expect(accepted).toMatchObject({ status: "deleting", deletion: { sessionsTotal: SESSIONS - SESSIONS / 10 } });
    const deletedAt = Date.now();
    await pollUntil("the key to be refused", async () => (await tenant.request("GET", "/v1/me")).status, (status) => status === 401, KEY_TRUST_MS);
    expect(Date.now() - deletedAt).toBeLessThanOrEqual(KEY_TRUST_MS);

    // Progress is visible while the sessions go, a bounded batch per tick, until 404.
    const seen = new Set<number>();
    await pollUntil(
      "the tenant's deletion to complete",
      async () => {
        const reply = await admin.request<{ deletion?: { sessionsDeleted: number } }>("GET", `/v1/admin/tenants/${tenantId}`);
        if (reply.status !== 404) expect(reply.status).toBe(200);
        if (reply.status === 200 && reply.body.deletion) seen.add(reply.body.deletion.sessionsDeleted);
        return reply.status;
      },
      (status) => status === 404,
      100_000,
    );
    expect([...seen].some((count) => count > 0 && count < SESSIONS - SESSIONS / 10)).toBe(true);
    // Every session object and the tenant's own object hold nothing; the directory remains.
    expect(databasesWithOurTables(server.persistDir).length).toBe(before - 1);
    expect((await admin.request("POST", "/v1/admin/tenants", { body: { id: tenantId } })).status).toBe(409);
  });
});
