import { describe, expect, it } from "vitest";
import { MAX_QUEUED_BYTES, MAX_QUEUED_ITEMS } from "../../schema/lane.ts";
import { call } from "./helpers.ts";
import { expectError, tenantWithSession } from "./session-helpers.ts";

// A lane's queue is bounded (items and payload bytes): every snapshot and GET …/lanes/{lane}
// carries it whole, so a full queue refuses more (409 QueueFull) and writes nothing.

async function laneWithKey(prefix: string) {
  const { key, base } = await tenantWithSession(prefix);
  expect((await call(`${base}/lanes/main`, { method: "PUT", body: {}, token: key })).status).toBe(201);
  return { key, lane: `${base}/lanes/main` };
}

describe("queue bounds", () => {
  it(`takes ${MAX_QUEUED_ITEMS} items, refuses the next with 409 QueueFull, and takes one again after a cancel`, { timeout: 60_000 }, async () => {
    const { key, lane } = await laneWithKey("qcount");
    const ids: string[] = [];
    for (let i = 0; i < MAX_QUEUED_ITEMS; i++) {
      const response = await call(`${lane}/queue`, { body: { kind: "nextRun", message: `item ${i}` }, token: key });
      expect(response.status).toBe(201);
      ids.push((await response.json<{ entryId: string }>()).entryId);
    }
    await expectError(await call(`${lane}/queue`, { body: { kind: "steer", message: "one too many" }, token: key }), 409, "QueueFull");
    const info = await (await call(lane, { token: key })).json<{ queues: unknown[] }>();
    expect(info.queues).toHaveLength(MAX_QUEUED_ITEMS);
    expect((await call(`${lane}/queue/${ids[0]}`, { method: "DELETE", token: key })).status).toBe(200);
    expect((await call(`${lane}/queue`, { body: { kind: "steer", message: "fits again" }, token: key })).status).toBe(201);
  });

  it("refuses an item that would take the queue past its byte bound; the lane and its snapshot still answer", { timeout: 60_000 }, async () => {
    const { key, lane } = await laneWithKey("qbytes");
    const big = "x".repeat(900 * 1024);
    const fits = Math.floor(MAX_QUEUED_BYTES / (900 * 1024 + 200));
    for (let i = 0; i < fits; i++) {
      expect((await call(`${lane}/queue`, { body: { kind: "followUp", message: big }, token: key })).status).toBe(201);
    }
    await expectError(await call(`${lane}/queue`, { body: { kind: "followUp", message: big }, token: key }), 409, "QueueFull");
    expect((await call(lane, { token: key })).status).toBe(200);
    const snapshot = await call(`${lane}/snapshot`, { token: key });
    expect(snapshot.status).toBe(200);
    expect((await snapshot.json<{ snapshot: { queues: unknown[] } }>()).snapshot.queues).toHaveLength(fits);
  });
});
