import { beforeAll, describe, expect, it } from "vitest";
import type { Entry } from "../../schema/entries.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { SNAPSHOT_TRANSCRIPT_MAX_BYTES, SNAPSHOT_TRANSCRIPT_MAX_ENTRIES } from "../../schema/transcript-bounds.ts";
import { call } from "./helpers.ts";
import { connect, events, expectSnapshot, fillLane, fold, watchSetup } from "./watch-helpers.ts";

// A lane snapshot carries a bounded tail of the transcript (docs/api-watch.md "Snapshot
// transcript"); older entries are read by REST from `olderEntries.start`. A session the API
// accepted never makes `GET …/snapshot` or the WebSocket snapshot fail, whatever its size.

type Page = { items: Entry[]; nextCursor: string | null };

const utf8 = new TextEncoder();

describe("a lane with 40 entries of 900 KB (36 MB of transcript)", { timeout: 120_000 }, () => {
  let setup: Awaited<ReturnType<typeof watchSetup>>;
  const appended: string[] = [];

  beforeAll(async () => {
    setup = await watchSetup("sb_large");
    for (let i = 0; i < 40; i++) {
      const response = await call(`${setup.sessionPath}/lanes/main/entries`, {
        body: { customType: "blob", data: `${i}:`.padEnd(900_000, "x") },
        token: setup.key,
      });
      expect(response.status).toBe(201);
      appended.push((await response.json<{ entryId: string }>()).entryId);
    }
  }, 120_000);

  it("GET …/snapshot answers 200 with a bounded tail that names where the older entries start", async () => {
    const response = await call(`${setup.sessionPath}/lanes/main/snapshot`, { token: setup.key });
    expect(response.status).toBe(200);
    const { snapshot } = await response.json<{ seq: number; snapshot: LaneSnapshot }>();
    const bytes = snapshot.transcript.reduce((sum, entry) => sum + utf8.encode(JSON.stringify(entry)).byteLength, 0);
    expect(bytes).toBeLessThanOrEqual(SNAPSHOT_TRANSCRIPT_MAX_BYTES);
    expect(snapshot.transcript.length).toBeGreaterThan(0);
    expect(snapshot.transcript.map((entry) => entry.id)).toEqual(appended.slice(-snapshot.transcript.length));
    expect(snapshot.olderEntries).toEqual({ start: appended[appended.length - snapshot.transcript.length - 1] });
  });

  it("the WebSocket snapshot carries the same tail; the older entries are read by REST from olderEntries.start", async () => {
    const client = await connect(`${setup.sessionPath}/lanes/main/watch`, setup.key);
    const { snapshot } = await expectSnapshot(client);
    client.ws.close(1000);
    const rest = await call(`${setup.sessionPath}/lanes/main/snapshot`, { token: setup.key });
    expect(snapshot).toStrictEqual((await rest.json<{ snapshot: LaneSnapshot }>()).snapshot);

    const start = snapshot.olderEntries?.start;
    if (start === undefined) throw new Error("The snapshot should name older entries");
    const older: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `start=${start}&stopAtType=compaction&limit=5${cursor === null ? "" : `&cursor=${cursor}`}`;
      const page = await call(`${setup.sessionPath}/branches/main/entries?${query}`, { token: setup.key });
      expect(page.status).toBe(200);
      const body: Page = await page.json();
      older.push(...body.items.map((entry) => entry.id));
      cursor = body.nextCursor;
    } while (cursor !== null);
    expect([...older.reverse(), ...snapshot.transcript.map((entry) => entry.id)]).toEqual(appended);
  });
});

describe("folding past the transcript bound", { timeout: 60_000 }, () => {
  it("a watched snapshot folded over entries that push the transcript past its bound equals a fresh snapshot", async () => {
    const { key, stub, sessionPath } = await watchSetup("sb_fold");
    await fillLane(stub, "main", 150, 100);
    const client = await connect(`${sessionPath}/lanes/main/watch`, key);
    const first = await expectSnapshot(client);
    const ids = await fillLane(stub, "main", 150, 100);
    const received = await client.until((message) => message.type === "event" && message.event.type === "entry_added" && message.event.entry.id === ids.at(-1));
    const folded = fold(first.snapshot, events(received).map((e) => e.event));
    const fresh = await call(`${sessionPath}/lanes/main/snapshot`, { token: key });
    const { snapshot } = await fresh.json<{ snapshot: LaneSnapshot }>();
    expect(folded).toStrictEqual(snapshot);
    expect(snapshot.transcript.length).toBe(SNAPSHOT_TRANSCRIPT_MAX_ENTRIES);
    expect(snapshot.olderEntries).toBeDefined();
    client.ws.close(1000);
  });
});
