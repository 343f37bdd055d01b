import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import type { CreatedSession } from "../../schema/session.ts";
import { fromWire } from "../../schema/wire.ts";
import { call, newTenant, json } from "./helpers.ts";
import { objectOf } from "./session-helpers.ts";

// A deletion removes the session's object first and its row in the tenant's index last (so a
// step that fails is repeated from what is left). A session created again under the same id in
// between is a new session: it keeps its own row, and the deletion's last step does not take it.

type Listed = { items: { id: string; name: string | null; createdAt: number }[] };

const listed = async (key: string): Promise<Listed["items"]> => (await json<Listed>(await call("/v1/sessions", { token: key }), 200)).items;

/** The first step of a deletion (the object's storage), as the background batch or `DELETE /v1/sessions/{sid}` takes it. */
async function deleteObject(tenantId: string, sid: string): Promise<number> {
  const reply = fromWire(await objectOf(tenantId, sid).deleteSession());
  if (!reply.ok || reply.value.createdAt === undefined) throw new Error("the session object held no session");
  // Creation times are in milliseconds: the session created again must not share its predecessor's.
  await new Promise((resolve) => setTimeout(resolve, 5));
  return reply.value.createdAt;
}

describe("a session created again while its deletion is under way", () => {
  it("leaves the background deletion's queue: the batch does not delete the new session, and it is listed", async () => {
    const { tenantId, key } = await newTenant("recreate_q");
    await json(await call("/v1/sessions", { token: key, body: { id: "s_again", name: "old", metadata: { cohort: "a" } } }), 201);
    // Queued for deletion (as a DELETE by metadata queues it), its object deleted by a batch that
    // stopped before its last step (the alarm repeats what is left).
    await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("INSERT INTO session_deletions (session_id, queued_at) VALUES ('s_again', ?)", Date.now());
    });
    await deleteObject(tenantId, "s_again");
    const created = await json<CreatedSession>(await call("/v1/sessions", { token: key, body: { id: "s_again", name: "new" } }), 201);

    await runDurableObjectAlarm(env.TENANTS.getByName(tenantId));
    expect((await json<CreatedSession>(await call("/v1/sessions/s_again", { token: key }), 200)).name).toBe("new");
    expect(await listed(key)).toEqual([expect.objectContaining({ id: "s_again", name: "new", createdAt: created.createdAt })]);
    // Its metadata is the new session's (none): a search by the old pair finds nothing.
    expect((await json<Listed>(await call("/v1/sessions?metadata.cohort=a", { token: key }), 200)).items).toEqual([]);
  });

  it("keeps its row when the deletion's last step (the index row) arrives after the new session was registered", async () => {
    const { tenantId, key } = await newTenant("recreate_late");
    await json(await call("/v1/sessions", { token: key, body: { id: "s_late", name: "old" } }), 201);
    const deletedCreatedAt = await deleteObject(tenantId, "s_late");
    const created = await json<CreatedSession>(await call("/v1/sessions", { token: key, body: { id: "s_late", name: "new" } }), 201);
    // The deletion's last step, naming the session it deleted.
    await env.TENANTS.getByName(tenantId).unregisterSession("s_late", deletedCreatedAt);
    expect(await listed(key)).toEqual([expect.objectContaining({ id: "s_late", name: "new", createdAt: created.createdAt })]);
    // Deleting the new session still removes it from the listing.
    expect((await call("/v1/sessions/s_late", { method: "DELETE", token: key })).status).toBe(204);
    expect(await listed(key)).toEqual([]);
  });
});
