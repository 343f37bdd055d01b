import { exports } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { createClient, watchLane, type FetchLike } from "../../client/index.ts";
import { newTenant } from "../api/helpers.ts";
import { WorkerdWebSocket } from "./sockets.ts";

// A page holds a browser token with the `watch` scope and watches its lane with watchLane, as
// client/README.md "Browser tokens" shows. A long transcript arrives as its newest part, and
// `olderEntries()` yields the rest by REST, on the branch of the lane's name: that read was 403
// TokenScope to a token. It reaches the branch of a lane the token reaches, and no other.

const BASE_URL = "http://api.test";
const appFetch: FetchLike = (input, init) => exports.default.fetch(input, init);

describe("watchLane with a browser token", { timeout: 60_000 }, () => {
  beforeEach(() => {
    WorkerdWebSocket.opened = [];
  });

  it("olderEntries() of a page's watch (token with the watch scope) reads the entries the snapshot left out", async () => {
    const { key } = await newTenant("rv_tok_older");
    const backend = createClient({ baseUrl: BASE_URL, key, fetch: appFetch });
    const { id } = await backend.sessions.create();
    await backend.lanes.put(id, "main");
    // More than the snapshot's 4 MiB transcript bound: the oldest entries are left out of it.
    const appended: string[] = [];
    for (let i = 0; i < 6; i++) appended.push((await backend.lanes.append(id, "main", { customType: "blob", data: `${i}:`.padEnd(900_000, "x") })).entryId);
    const { token } = await backend.sessions.createBrowserToken(id, { scopes: ["watch"], lanes: ["main"] });

    // In the page, with the token only.
    const handle = watchLane({ baseUrl: BASE_URL, key: token, sessionId: id, lane: "main", WebSocket: WorkerdWebSocket, fetch: appFetch });
    const replica = await handle.ready;
    expect(replica.olderEntries).toBeDefined();
    const older: string[] = [];
    try {
      for await (const entry of handle.olderEntries()) older.push(entry.id);
    } finally {
      handle.close();
    }
    expect([...older.reverse(), ...replica.transcript.map((entry) => entry.id)]).toEqual(appended);

    // Another branch (no lane of the token's bears its name) stays out of reach.
    await backend.branches.create(id, { name: "other", at: appended[0] ?? null });
    const other = await appFetch(`${BASE_URL}/v1/sessions/${id}/branches/other/entries`, { headers: { authorization: `Bearer ${token}` } });
    expect(other.status).toBe(403);
    expect(await other.json()).toMatchObject({ error: { code: "TokenScope", details: { lane: "other" } } });
  });
});
