import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { CreatedSession } from "../../schema/session.ts";
import { call, newTenant, json } from "./helpers.ts";

// The tenant's index keeps a copy of each session's name and agent version for listings and
// search. A PATCH writes the session first, then the index; two concurrent PATCHes can reach the
// index in the other order. The index keeps the copy of the newer write (the session's seq), so a
// listing never shows the older name or version once the newer one is indexed.

type Listed = { items: { id: string; name: string | null; agent?: { id: string; version: number } }[] };

const listed = async (key: string, query = ""): Promise<Listed["items"]> => (await json<Listed>(await call(`/v1/sessions${query}`, { token: key }), 200)).items;

describe("the session index under concurrent PATCHes", () => {
  it("an older rename reaching the index last does not replace the newer name", async () => {
    const tenant = await newTenant("idx_name");
    await json(await call("/v1/sessions", { token: tenant.key, body: { id: "s_idx_name", name: "created" } }), 201);
    await json(await call("/v1/sessions/s_idx_name", { method: "PATCH", token: tenant.key, body: { name: "newer" } }), 200);
    // An earlier PATCH's index write arriving late: its session write has a lower seq.
    await env.TENANTS.getByName(tenant.tenantId).renameSession("s_idx_name", "older", 1);
    expect((await listed(tenant.key))[0]).toMatchObject({ id: "s_idx_name", name: "newer" });
    // A later PATCH still wins.
    await json(await call("/v1/sessions/s_idx_name", { method: "PATCH", token: tenant.key, body: { name: "latest" } }), 200);
    expect((await listed(tenant.key))[0]).toMatchObject({ name: "latest" });
  });

  it("a retried creation does not undo a rename made since", async () => {
    const tenant = await newTenant("idx_retry");
    const body = { id: "s_idx_retry", name: "first" };
    const headers = { "idempotency-key": "create-once" };
    await json(await call("/v1/sessions", { token: tenant.key, body, headers }), 201);
    await json(await call("/v1/sessions/s_idx_retry", { method: "PATCH", token: tenant.key, body: { name: "renamed" } }), 200);
    // The creation's own index write, repeated (as a retry after a lost answer re-registers it).
    const session = await json<CreatedSession>(await call("/v1/sessions/s_idx_retry", { token: tenant.key }), 200);
    await env.TENANTS.getByName(tenant.tenantId).registerSession({ id: session.id, createdAt: session.createdAt, name: "first", metadata: {} });
    expect((await listed(tenant.key))[0]).toMatchObject({ name: "renamed" });
  });

  it("an older move reaching the index last does not replace the newer version, in the listing and the search by agent", async () => {
    const tenant = await newTenant("idx_agent");
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "helper", name: "v1" } }), 201);
    await json(await call("/v1/agents/helper", { method: "PATCH", token: tenant.key, body: { name: "v2" } }), 200);
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "other" } }), 201);
    await json(await call("/v1/sessions", { token: tenant.key, body: { id: "s_idx_agent", agent: "helper@1" } }), 201);
    const moved = await json<CreatedSession>(await call("/v1/sessions/s_idx_agent", { method: "PATCH", token: tenant.key, body: { agent: "helper@2" } }), 200);
    expect(moved.agent).toEqual({ id: "helper", version: 2 });
    // An earlier move's index write (to another agent) arriving late.
    await env.TENANTS.getByName(tenant.tenantId).setSessionAgent("s_idx_agent", { id: "other", version: 1 }, 1);
    expect((await listed(tenant.key))[0]).toMatchObject({ agent: { id: "helper", version: 2 } });
    expect((await listed(tenant.key, "?agent=other")).map(({ id }) => id)).toEqual([]);
    expect((await listed(tenant.key, "?agent=helper")).map(({ id }) => id)).toEqual(["s_idx_agent"]);
  });
});
