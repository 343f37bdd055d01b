import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { call } from "./helpers.ts";
import { objectOf, tenantWithSession, user } from "./session-helpers.ts";

// Engine hardening 6: POST …/branches/{b}/entries decides lane-or-branch inside the object, on the
// session's line, in one call, so a lane created meanwhile never ends up with a stale tip.

describe("hardening 6: a branch append racing the creation of a lane on that branch", () => {
  it("the appended entry stays on the lane's branch, and the lane's next entry follows it", async () => {
    const { tenantId, sid, key, base } = await tenantWithSession("appendrace");
    expect((await call(`${base}/branches`, { body: { name: "b", at: null }, token: key })).status).toBe(201);
    const stub = objectOf(tenantId, sid);
    const raced = await runInDurableObject(stub, async (instance: SessionObject) => {
      const harness = await instance.harness();
      // Hold the line: the lane creation queues first, the HTTP append behind it.
      const scope = await instance.session().beginMutation();
      // The hosted harness has no seed model: a lane created on it names its model, as the RPC does.
      const creating = harness.lane("b", { model: { provider: "scripted", modelId: "echo" } });
      const appending = call(`${base}/branches/b/entries`, { body: { message: user("raced") }, token: key });
      // Let the request reach the object and queue its mutation (it cannot commit while the line is held).
      await new Promise((resolve) => setTimeout(resolve, 300));
      scope.end();
      await creating;
      const response = await appending;
      return { status: response.status, body: await response.json<{ entryId: string; placed: boolean }>() };
    });
    expect(raced.status).toBe(201);
    const next = await call(`${base}/branches/b/entries`, { body: { message: user("after") }, token: key });
    expect(next.status).toBe(201);
    const after = await next.json<{ entryId: string }>();
    const listed = await call(`${base}/branches/b/entries?order=asc`, { token: key });
    const page = await listed.json<{ items: { id: string; parentId: string | null }[] }>();
    expect(page.items.map((entry) => entry.id)).toEqual([raced.body.entryId, after.entryId]);
    expect(page.items[1]?.parentId).toBe(raced.body.entryId);
  });
});
