import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { watchLane, type LaneWatch } from "../../client/watch.ts";
import type { Entry } from "../../schema/entries.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { SNAPSHOT_TRANSCRIPT_MAX_BYTES } from "../../schema/transcript-bounds.ts";
import { WATCH_UNACKED_WINDOW_BYTES } from "../../schema/watch.ts";
import { Api, createTenant, openLaneWatch, pollUntil, readAdminToken, type WatchClient } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { openRawWebSocket } from "./raw-websocket.ts";

// The watch's bounds against `npm start`, as clients see them: a lane of 40 entries of 900 KB
// (36 MB, more than one RPC reply may carry) still answers its snapshot, bounded; a paused reader
// that keeps asking for snapshots is closed 1013 while the object's other sockets keep receiving;
// a revoked key's socket is closed.

const ENTRY_BYTES = 900_000;
const ENTRIES = 40;
const utf8 = new TextEncoder();

describe("watch bounds against npm start", () => {
  let server: DevServer;
  let admin: Api;
  let tenant: Awaited<ReturnType<typeof createTenant>>;
  const sid = "large";
  const appended: string[] = [];
  const watches: LaneWatch[] = [];
  const sockets: WatchClient[] = [];

  beforeAll(async () => {
    server = await startDevServer();
    admin = new Api(server.baseUrl, readAdminToken());
    tenant = await createTenant(admin, "bounds");
    await tenant.api.expect(201, "POST", "/v1/sessions", { body: { id: sid } });
    await tenant.api.expect(201, "PUT", `/v1/sessions/${sid}/lanes/main`, { body: {} });
    for (let i = 0; i < ENTRIES; i++) {
      const body = { customType: "blob", data: `${i}:`.padEnd(ENTRY_BYTES, "x") };
      appended.push((await tenant.api.expect<{ entryId: string }>(201, "POST", `/v1/sessions/${sid}/lanes/main/entries`, { body })).entryId);
    }
  }, 180_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    for (const watch of watches) watch.close();
    for (const socket of sockets) await socket.close();
    await server?.stop();
  });

  it("GET …/snapshot and the WebSocket snapshot of a 36 MB lane answer a bounded tail; the SDK reads the rest by REST", async () => {
    const { snapshot } = await tenant.api.expect<{ seq: number; snapshot: LaneSnapshot }>(200, "GET", `/v1/sessions/${sid}/lanes/main/snapshot`);
    const bytes = snapshot.transcript.reduce((sum, entry) => sum + utf8.encode(JSON.stringify(entry)).byteLength, 0);
    expect(bytes).toBeLessThanOrEqual(SNAPSHOT_TRANSCRIPT_MAX_BYTES);
    expect(snapshot.transcript.map((entry) => entry.id)).toEqual(appended.slice(-snapshot.transcript.length));
    expect(snapshot.olderEntries).toEqual({ start: appended[appended.length - snapshot.transcript.length - 1] });

    const socket = await openLaneWatch(server.baseUrl, tenant.key, sid, "main");
    sockets.push(socket);
    const first = await socket.next();
    if (first.type !== "snapshot") throw new Error(`expected a snapshot, got ${first.type}`);
    expect(first.snapshot).toEqual(snapshot);

    const watch = watchLane({ baseUrl: server.baseUrl, key: tenant.key, sessionId: sid, lane: "main" });
    watches.push(watch);
    await watch.ready;
    const older: Entry[] = [];
    for await (const entry of watch.olderEntries({ pageSize: 8 })) older.push(entry);
    expect([...older.map((entry) => entry.id).reverse(), ...snapshot.transcript.map((entry) => entry.id)]).toEqual(appended);
  });

  it("a paused reader sending 100 resnapshot requests is closed 1013 while the object's other sockets keep receiving", async () => {
    const healthy = watchLane({ baseUrl: server.baseUrl, key: tenant.key, sessionId: sid, lane: "main" });
    watches.push(healthy);
    await healthy.ready;
    const statuses: string[] = [];
    healthy.on((update) => void (update.type === "status" && statuses.push(update.status)));

    const paused = await openRawWebSocket(server.baseUrl, `/v1/sessions/${sid}/lanes/main/watch`, tenant.key);
    paused.pause();
    let sent = 0;
    for (; sent < 100; sent++) {
      if (!paused.send(JSON.stringify({ type: "resnapshot" }))) break;
      // Paced, so that requests are not all answered by one coalesced snapshot.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const frames = await paused.readUntilClose(60_000);
    paused.destroy();
    expect(frames.close?.code).toBe(1013);
    const received = frames.texts.reduce((sum, text) => sum + utf8.encode(text).byteLength, 0);
    const largest = Math.max(...frames.texts.map((text) => utf8.encode(text).byteLength));
    // The server let at most its window plus one message go unacknowledged on that socket.
    expect(received).toBeLessThanOrEqual(WATCH_UNACKED_WINDOW_BYTES + largest);
    expect(frames.texts.length).toBeLessThan(sent + 1);

    // The object's other socket is unaffected and keeps receiving.
    const { entryId } = await tenant.api.expect<{ entryId: string }>(201, "POST", `/v1/sessions/${sid}/lanes/main/entries`, {
      body: { customType: "note", data: "after the slow reader" },
    });
    await pollUntil("the healthy replica to receive the new entry", async () => healthy.snapshot()?.tipId, (tip) => tip === entryId);
    expect(healthy.status()).toBe("open");
    expect(statuses).not.toContain("reconnecting");
  });

  it("a key revoked while its socket is open has the socket closed (1008) within 5 s; another key's socket keeps receiving", async () => {
    const second = await admin.expect<{ keyId: string; key: string }>(201, "POST", `/v1/admin/tenants/${tenant.tenantId}/keys`, { body: { name: "second" } });
    // The close frame is what the server decides; standard clients report their close event only
    // once the TCP connection ends (in wrangler dev, about 10 s after the close frame).
    const revoked = await openRawWebSocket(server.baseUrl, `/v1/sessions/${sid}/lanes/main/watch`, second.key);
    const kept = await openLaneWatch(server.baseUrl, tenant.key, sid, "main");
    sockets.push(kept);
    await kept.next();

    await admin.expect(204, "DELETE", `/v1/admin/tenants/${tenant.tenantId}/keys/${second.keyId}`);
    const frames = await revoked.readUntilClose(5_000);
    revoked.destroy();
    expect(frames.close).toEqual({ code: 1008, reason: "The API key was revoked" });

    const { entryId } = await tenant.api.expect<{ entryId: string }>(201, "POST", `/v1/sessions/${sid}/lanes/main/entries`, {
      body: { customType: "note", data: "after the revocation" },
    });
    await kept.until((message) => message.type === "event" && message.event.type === "entry_added" && message.event.entry.id === entryId);
  });
});
