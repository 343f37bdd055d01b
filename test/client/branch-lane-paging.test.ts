import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient, isApiError, type AgentSessionsClient } from "../../client/index.ts";
import { newTenant } from "../api/helpers.ts";

// The SDK's branch and lane listings are pages, with async iterators over every page, and a
// Session read says where its embedded listings continue.

async function sessionClient(prefix: string): Promise<{ client: AgentSessionsClient; sid: string }> {
  const tenant = await newTenant(prefix);
  const client = createClient({ baseUrl: "http://api.test/", key: tenant.key, fetch: (input, init) => exports.default.fetch(input, init) });
  const session = await client.sessions.create();
  return { client, sid: session.id };
}

describe("SDK branch and lane listings", () => {
  it("lists branches a page at a time and iterates every branch with all()", async () => {
    const { client, sid } = await sessionClient("sdk_brpages");
    for (const name of ["c", "a", "b"]) await client.branches.create(sid, { name, at: null });
    await client.lanes.put(sid, "d");
    const first = await client.branches.list(sid, { limit: 2 });
    expect(first.items.map((row) => row.name)).toEqual(["a", "b"]);
    if (first.nextCursor === null) throw new Error("expected a second page");
    expect((await client.branches.list(sid, { limit: 2, cursor: first.nextCursor })).items).toEqual([
      { name: "c", tipId: null, lane: false },
      { name: "d", tipId: null, lane: true },
    ]);
    const every: string[] = [];
    for await (const row of client.branches.all(sid, { limit: 1 })) every.push(row.name);
    expect(every).toEqual(["a", "b", "c", "d"]);
  });

  it("lists lanes a page at a time and iterates every lane with all()", async () => {
    const { client, sid } = await sessionClient("sdk_lnpages");
    for (const name of ["z", "x", "y"]) await client.lanes.put(sid, name);
    const first = await client.lanes.list(sid, { limit: 2 });
    expect({ names: first.items.map((lane) => lane.name), more: first.nextCursor !== null }).toEqual({ names: ["x", "y"], more: true });
    const every: string[] = [];
    for await (const lane of client.lanes.all(sid, { limit: 2 })) every.push(lane.name);
    expect(every).toEqual(["x", "y", "z"]);
  });

  it("reads a session whose embedded listings are complete (null cursors); a bad cursor is a ValidationFailed API error", async () => {
    const { client, sid } = await sessionClient("sdk_view");
    await client.lanes.put(sid, "main");
    expect(await client.sessions.get(sid)).toMatchObject({
      branches: [{ name: "main", tipId: null, lane: true }],
      branchesNextCursor: null,
      lanes: [{ name: "main", tipId: null, operation: null }],
      lanesNextCursor: null,
    });
    const refused = await client.branches.list(sid, { cursor: "not-a-cursor" }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isApiError(refused, "ValidationFailed")).toBe(true);
  });
});
