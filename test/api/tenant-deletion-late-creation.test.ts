import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { adminToken, call, newTenant } from "./helpers.ts";
import { exportText, newSessionId, send } from "./data-helpers.ts";
import { objectOf } from "./session-helpers.ts";
import { eventually } from "./webhooks-helpers.ts";

// A tenant's deletion leaves nothing behind (docs/data.md), also of a request whose key was checked
// before the deletion began and that creates its session after it completed (a long upload).

const admin = (path: string, method = "GET", body?: unknown) => call(`/v1/admin${path}`, { method, token: adminToken(), ...(body !== undefined && { body }) });

function holdsStorage(tenantId: string, sid: string): Promise<boolean> {
  return runInDurableObject(objectOf(tenantId, sid), (_instance: SessionObject, state) =>
    state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\'").toArray().length > 0,
  );
}

describe("a creation that outlasts its tenant's deletion", { timeout: 120_000 }, () => {
  it("a one-request import whose upload ends after the deletion completed answers 401 and leaves no session object behind", async () => {
    const { tenantId, key } = await newTenant("latedel");
    const source = newSessionId("latesrc");
    expect((await call("/v1/sessions", { body: { id: source }, token: key })).status).toBe(201);
    const lines = (await exportText(key, source)).trim().split("\n");
    const target = newSessionId("latetgt");

    const encoder = new TextEncoder();
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    const writer = writable.getWriter();
    void writer.write(encoder.encode(`${lines[0]}\n`));
    // The key is verified now, at the start of a slow upload.
    const answer = send(`/v1/sessions/import?id=${target}`, { body: readable, token: key });
    await eventually(async () => ((await holdsStorage(tenantId, target)) ? true : undefined), "the import to be staged");

    expect((await admin(`/tenants/${tenantId}`, "DELETE")).status).toBe(202);
    const tenant = env.TENANTS.getByName(tenantId);
    // As tenant-deletion.test.ts: the 15 s grace moved into the past.
    await runInDurableObject(tenant, (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE tenant SET deleting_at = deleting_at - 60000");
    });
    await eventually(async () => {
      await runDurableObjectAlarm(tenant);
      return (await admin(`/tenants/${tenantId}`)).status === 404 ? true : undefined;
    }, "the tenant's deletion to complete");
    expect(await holdsStorage(tenantId, source)).toBe(false);

    // The upload ends after the tenant is gone.
    for (const line of lines.slice(1)) void writer.write(encoder.encode(`${line}\n`));
    void writer.close();
    const response = await answer;
    const status = response.status;
    await response.text();
    // Once the deletion is complete nothing of the tenant is left: the session the import made is
    // deleted again (no index, queue or key could ever reach it), and the request answered as its key is now.
    expect(status).toBe(401);
    expect(await holdsStorage(tenantId, target)).toBe(false);
  });
});
