import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, readAdminToken } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { databasesWithOurTables } from "./storage-count.ts";

// Traffic that proves nothing (a garbage key, a read of a session that does not exist) must not
// create a Durable Object database: each one is storage billed for ever. What the local runtime
// keeps on disk, and so what is counted: storage-count.ts.
const garbageKey = (tenantId: string): string => `sk_${tenantId}_${randomBytes(32).toString("base64url")}`;

describe("storage is created only by traffic that proves something", () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer();
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
  });
  printServerOutputOnFailure(() => [server]);

  it("50 garbage keys and 50 reads of unknown sessions leave the number of databases unchanged", async () => {
    const admin = new Api(server.baseUrl, readAdminToken());
    const tenantId = `nostore_${Date.now().toString(36)}`;
    await admin.expect(201, "POST", "/v1/admin/tenants", { body: { id: tenantId } });
    const { key } = await admin.expect<{ key: string }>(201, "POST", `/v1/admin/tenants/${tenantId}/keys`, { body: {} });
    const tenant = new Api(server.baseUrl, key);
    await tenant.expect(200, "GET", "/v1/me");
    const before = databasesWithOurTables(server.persistDir);
    expect(before.length).toBeGreaterThan(0);

    const refused: number[] = [];
    for (let index = 0; index < 50; index++) {
      // Half aim at tenants that do not exist, half at the real tenant with a wrong secret.
      const target = index % 2 === 0 ? `victim_${index}_${Date.now().toString(36)}` : tenantId;
      refused.push((await new Api(server.baseUrl, garbageKey(target)).request("GET", "/v1/me")).status);
    }
    expect(refused.every((status) => status === 401 || status === 429)).toBe(true);

    const unknown: number[] = [];
    for (let index = 0; index < 50; index++) {
      const sid = `ghost_${index}`;
      const path = [`/v1/sessions/${sid}`, `/v1/sessions/${sid}/entries`, `/v1/sessions/${sid}/branches`, `/v1/sessions/${sid}/values/app/k`, `/v1/sessions/${sid}/lanes`][index % 5];
      unknown.push((await tenant.request("GET", path ?? "/")).status);
    }
    expect(unknown.every((status) => status === 404)).toBe(true);

    expect(databasesWithOurTables(server.persistDir).sort()).toEqual(before.sort());
  });

  it("past the per-source limit, garbage keys from one address are refused 429 before any object is touched", async () => {
    let refused: Awaited<ReturnType<Api["request"]>> | undefined;
    for (let index = 0; index < 130 && !refused; index++) {
      const reply = await new Api(server.baseUrl, garbageKey(`flood_${index}_${Date.now().toString(36)}`)).request("GET", "/v1/me");
      if (reply.status === 429) refused = reply;
      else expect(reply.status).toBe(401);
    }
    expect(refused?.headers.get("retry-after")).toBe("60");
  });
});
