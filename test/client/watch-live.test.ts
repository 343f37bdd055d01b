import { evictDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { createClient, watchLane, type AgentSessionsClient, type LaneWatchUpdate, type WatchError } from "../../client/index.ts";
import { SNAPSHOT_TRANSCRIPT_MAX_BYTES } from "../../schema/transcript-bounds.ts";
import { WATCH_UNACKED_WINDOW_BYTES } from "../../schema/watch.ts";
import { adminToken, call, newTenant } from "../api/helpers.ts";
import { eventually, WorkerdWebSocket } from "./sockets.ts";

// watchLane over real sockets to the app in workerd (the WorkerdWebSocket adapter performs the
// upgrade with the `bearer.<key>` subprotocol, as a browser would).

const BASE_URL = "http://api.test";

async function setup(prefix: string): Promise<{ client: AgentSessionsClient; key: string; keyId: string; tenantId: string; sessionId: string }> {
  const { key, keyId, tenantId } = await newTenant(prefix);
  const client = createClient({ baseUrl: BASE_URL, key, fetch: (input, init) => exports.default.fetch(input, init) });
  const { id } = await client.sessions.create();
  await client.lanes.put(id, "main");
  return { client, key, keyId, tenantId, sessionId: id };
}

describe("watchLane over a real socket", { timeout: 30_000 }, () => {
  beforeEach(() => {
    WorkerdWebSocket.opened = [];
  });

  it("folds a prompt's events into a replica equal to GET …/snapshot", async () => {
    const { client, key, sessionId } = await setup("sdk_live");
    const updates: LaneWatchUpdate[] = [];
    const errors: WatchError[] = [];
    const handle = client.watchLane(sessionId, "main", { WebSocket: WorkerdWebSocket, onError: (error) => errors.push(error) });
    handle.on((update) => updates.push(update));
    const first = await handle.ready;
    expect(first).toMatchObject({ lane: "main", tipId: null, operation: null, transcript: [] });
    expect(WorkerdWebSocket.opened[0]?.protocol).toBe(`bearer.${key}`);

    const outcome = await client.prompt(sessionId, "main", "watch me");
    if (outcome.state !== "settled") throw new Error(`expected a settled prompt, got ${outcome.state}`);
    const rest = await client.lanes.snapshot(sessionId, "main");
    expect(rest.snapshot.lastResult).toMatchObject({ operationId: outcome.result.operationId, tipId: outcome.result.tipId, status: "completed" });
    await expect.poll(() => handle.snapshot(), { timeout: 5_000 }).toStrictEqual(rest.snapshot);

    const folded = updates.flatMap((u) => (u.type === "event" ? [u] : []));
    expect(folded.map((u) => u.event.type)).toEqual(expect.arrayContaining(["run_start", "entry_added", "usage", "run_end"]));
    expect(folded.every((u, i) => i === 0 || u.seq > (folded[i - 1]?.seq ?? Infinity))).toBe(true);
    // One socket, one snapshot: the replica was reached by folding events, not by a resnapshot.
    expect(updates.some((u) => u.type === "resnapshot")).toBe(false);
    expect(updates.filter((u) => u.type === "snapshot")).toHaveLength(1);
    expect(WorkerdWebSocket.opened).toHaveLength(1);
    expect(errors).toEqual([]);
    handle.close();
    expect(handle.status()).toBe("closed");
  });

  it("reconnects after the server closes the socket and keeps folding from the fresh snapshot", async () => {
    const { client, key, sessionId, tenantId } = await setup("sdk_reconnect");
    const handle = watchLane({ baseUrl: BASE_URL, key, sessionId, lane: "main", WebSocket: WorkerdWebSocket, backoff: { initialMs: 20, maxMs: 100 } });
    const statuses: string[] = [];
    handle.on((update) => {
      if (update.type === "status") statuses.push(`${update.status}${update.code === undefined ? "" : `:${update.code}`}`);
    });
    await handle.ready;
    await client.prompt(sessionId, "main", "before the drop");
    // A deploy-style restart of the session object closes its sockets.
    await evictDurableObject(env.SESSIONS.getByName(`${tenantId}:${sessionId}`), { webSockets: "close" });
    await eventually(() => WorkerdWebSocket.opened.length === 2 && handle.status() === "open", "a second connection");
    expect(statuses.some((status) => status.startsWith("reconnecting:"))).toBe(true);
    const outcome = await client.prompt(sessionId, "main", "after the reconnect");
    expect(outcome.state).toBe("settled");
    const rest = await client.lanes.snapshot(sessionId, "main");
    await expect.poll(() => handle.snapshot(), { timeout: 5_000 }).toStrictEqual(rest.snapshot);
    expect(rest.snapshot.transcript).toHaveLength(4);
    handle.close();
  });

  it("ends when the session is deleted (close 1000), and gives up on a refused upgrade", async () => {
    const { client, key, sessionId } = await setup("sdk_end");
    const errors: WatchError[] = [];
    const handle = watchLane({ baseUrl: BASE_URL, key, sessionId, lane: "main", WebSocket: WorkerdWebSocket, onError: (error) => errors.push(error) });
    await handle.ready;
    await client.sessions.delete(sessionId);
    await eventually(() => handle.status() === "closed", "the watch to end");
    expect(errors.at(-1)).toMatchObject({ kind: "ended", message: expect.stringContaining("Session deleted") });
    expect(WorkerdWebSocket.opened).toHaveLength(1);

    const refused = watchLane({ baseUrl: BASE_URL, key: "sk_nobody_bad", sessionId, lane: "main", WebSocket: WorkerdWebSocket, backoff: { initialMs: 5, maxAttempts: 1 } });
    await expect(refused.ready).rejects.toMatchObject({ kind: "ended" });
    expect(WorkerdWebSocket.opened).toHaveLength(3);
  });

  it("acknowledges what it receives: more than the server's window of events arrives on one socket; older entries come by REST", async () => {
    const { client, key, sessionId } = await setup("sdk_acks");
    const fetch = (input: string, init?: RequestInit) => exports.default.fetch(input, init);
    const handle = watchLane({ baseUrl: BASE_URL, key, sessionId, lane: "main", WebSocket: WorkerdWebSocket, fetch });
    await handle.ready;
    const appended: string[] = [];
    const entryBytes = 900_000;
    const count = Math.ceil((WATCH_UNACKED_WINDOW_BYTES * 1.5) / entryBytes);
    for (let i = 0; i < count; i++) {
      appended.push((await client.lanes.append(sessionId, "main", { customType: "blob", data: `${i}:`.padEnd(entryBytes, "x") })).entryId);
    }
    await eventually(() => handle.snapshot()?.tipId === appended.at(-1), "the last entry in the replica");
    // One socket the whole time: the server never closed it as a slow consumer.
    expect(WorkerdWebSocket.opened).toHaveLength(1);
    const rest = await client.lanes.snapshot(sessionId, "main");
    expect(handle.snapshot()).toStrictEqual(rest.snapshot);

    const replica = handle.snapshot();
    if (!replica?.olderEntries) throw new Error("a transcript this long is a tail");
    expect(replica.transcript.length).toBeLessThanOrEqual(Math.ceil(SNAPSHOT_TRANSCRIPT_MAX_BYTES / entryBytes));
    const older: string[] = [];
    for await (const entry of handle.olderEntries({ pageSize: 4 })) older.push(entry.id);
    expect([...older.reverse(), ...replica.transcript.map((entry) => entry.id)]).toEqual(appended);
    handle.close();
  });

  it("ends when its key is revoked (close 1008) instead of reconnecting", async () => {
    const { key, keyId, tenantId, sessionId } = await setup("sdk_revoked");
    const errors: WatchError[] = [];
    const handle = watchLane({ baseUrl: BASE_URL, key, sessionId, lane: "main", WebSocket: WorkerdWebSocket, onError: (error) => errors.push(error) });
    await handle.ready;
    const revoked = await call(`/v1/admin/tenants/${tenantId}/keys/${keyId}`, { method: "DELETE", token: adminToken() });
    expect(revoked.status).toBeLessThan(300);
    await eventually(() => handle.status() === "closed", "the watch to end");
    expect(errors.at(-1)).toMatchObject({ kind: "ended", message: expect.stringContaining("revoked") });
    expect(WorkerdWebSocket.opened).toHaveLength(1);
  });
});
