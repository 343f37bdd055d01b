import { describe, expect, it } from "vitest";
import type { LaneExecutionInfo, LaneInfo, LaneSnapshot } from "../../schema/lane.ts";
import { assistantMessage, userMessage } from "../helpers/messages.ts";
import { call, errorCode, newTenant } from "./helpers.ts";
import { execution, laneSetup } from "./lane-helpers.ts";

// Lanes and their queues through the real Hono app (spec/API.md "Lanes", "Queue").

const PUT = "PUT";

describe("lanes", () => {
  it("PUT creates a lane (201), answers an existing one with 200, and lists it", async () => {
    const { key, sessionPath } = await laneSetup("lane_put");
    const again = await call(`${sessionPath}/lanes/main`, { method: PUT, token: key });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ name: "main", tipId: null, operation: null });
    const created = await call(`${sessionPath}/lanes/side`, { method: PUT, body: {}, token: key });
    expect(created.status).toBe(201);
    expect(await created.json()).toEqual({ name: "side", tipId: null, operation: null });
    const listed = await call(`${sessionPath}/lanes`, { token: key });
    expect(listed.status).toBe(200);
    expect((await listed.json<{ items: LaneInfo[]; nextCursor: string | null }>()).items.map((lane) => lane.name)).toEqual(["main", "side"]);
  });

  it("PUT with createAt starts the lane at an entry; unknown entries are 404, bad ids 400", async () => {
    const { key, sessionPath, lanePath } = await laneSetup("lane_at");
    const appended = await call(`${lanePath}/entries`, { body: { message: userMessage("root") }, token: key });
    const { entryId } = await appended.json<{ entryId: string }>();
    const forked = await call(`${sessionPath}/lanes/fork`, { method: PUT, body: { createAt: entryId }, token: key });
    expect(forked.status).toBe(201);
    expect(await forked.json()).toMatchObject({ name: "fork", tipId: entryId });
    const rooted = await call(`${sessionPath}/lanes/rooted`, { method: PUT, body: { createAt: null }, token: key });
    expect(await rooted.json()).toMatchObject({ tipId: null });
    const unknown = await call(`${sessionPath}/lanes/other`, { method: PUT, body: { createAt: "0190aaaa-0000-7000-8000-000000000000" }, token: key });
    expect(unknown.status).toBe(404);
    expect(await errorCode(unknown)).toBe("UnknownTarget");
    const invalid = [
      await call(`${sessionPath}/lanes/x`, { method: PUT, body: { createAt: "not an id" }, token: key }),
      await call(`${sessionPath}/lanes/x`, { method: PUT, body: { at: null }, token: key }),
      await call(`${sessionPath}/lanes/has:colon`, { method: PUT, token: key }),
      await call(`${sessionPath}/lanes/x`, { method: PUT, rawBody: "{nope", token: key }),
    ];
    expect(invalid.map((r) => r.status)).toEqual([400, 400, 400, 400]);
  });

  it("GET lane answers its execution info; unknown lanes are 404 UnknownLane", async () => {
    const { key, sessionPath, lanePath } = await laneSetup("lane_get");
    const info = await execution({ key, lanePath });
    expect(info).toEqual({
      lane: "main",
      tipId: null,
      configuration: { model: { provider: "scripted", modelId: "echo" }, thinkingLevel: "off", activeToolNames: [] },
      current: null,
      lastOperationId: null,
      queues: [],
    });
    for (const path of ["", "/snapshot"]) {
      const missing = await call(`${sessionPath}/lanes/nope${path}`, { token: key });
      expect(missing.status).toBe(404);
      expect(await errorCode(missing)).toBe("UnknownLane");
    }
  });

  it("PATCH config sets model, thinking level and active tools; bad bodies are 400", async () => {
    const { key, lanePath } = await laneSetup("lane_cfg");
    const patched = await call(`${lanePath}/config`, {
      method: "PATCH",
      body: { model: { provider: "scripted", modelId: "script" }, thinkingLevel: "high", activeTools: [] },
      token: key,
    });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toEqual({ model: { provider: "scripted", modelId: "script" }, thinkingLevel: "high", activeToolNames: [] });
    expect((await execution({ key, lanePath })).configuration.thinkingLevel).toBe("high");
    const invalid = [
      await call(`${lanePath}/config`, { method: "PATCH", body: { thinkingLevel: "extreme" }, token: key }),
      await call(`${lanePath}/config`, { method: "PATCH", body: { model: { provider: "" } }, token: key }),
      await call(`${lanePath}/config`, { method: "PATCH", body: { temperature: 1 }, token: key }),
      await call(`${lanePath}/config`, { method: "PATCH", body: { activeTools: "read" }, token: key }),
    ];
    expect(invalid.map((r) => r.status)).toEqual([400, 400, 400, 400]);
    expect(await errorCode(invalid[0] ?? new Response())).toBe("ValidationFailed");
  });

  it("POST entries places messages and custom entries when idle; invalid messages are 422", async () => {
    const { key, lanePath } = await laneSetup("lane_entries");
    const message = await call(`${lanePath}/entries`, { body: { message: userMessage("note") }, token: key });
    expect(message.status).toBe(201);
    const placed = await message.json<{ entryId: string; placed: boolean }>();
    expect(placed).toEqual({ entryId: expect.any(String), placed: true });
    const custom = await call(`${lanePath}/entries`, { body: { customType: "app.marker", data: { n: 1 } }, token: key });
    expect(custom.status).toBe(201);
    const customEntry = await custom.json<{ entryId: string; placed: boolean }>();
    expect(customEntry.placed).toBe(true);
    expect((await execution({ key, lanePath })).tipId).toBe(customEntry.entryId);
    const pending = await call(`${lanePath}/entries`, { body: { message: assistantMessage("partial", "pending") }, token: key });
    expect(pending.status).toBe(422);
    expect(await errorCode(pending)).toBe("InvalidMessage");
    const invalid = [
      await call(`${lanePath}/entries`, { body: {}, token: key }),
      await call(`${lanePath}/entries`, { body: { message: { role: "user" } }, token: key }),
      await call(`${lanePath}/entries`, { body: { customType: "" }, token: key }),
      await call(`${lanePath}/entries`, { body: { message: userMessage("x"), customType: "y" }, token: key }),
    ];
    expect(invalid.map((r) => r.status)).toEqual([400, 400, 400, 400]);
  });

  it("GET snapshot answers { seq, snapshot } with the transcript", async () => {
    const { key, lanePath } = await laneSetup("lane_snap");
    await call(`${lanePath}/entries`, { body: { message: userMessage("first") }, token: key });
    const response = await call(`${lanePath}/snapshot`, { token: key });
    expect(response.status).toBe(200);
    const body = await response.json<{ seq: number; snapshot: LaneSnapshot }>();
    // Every event is numbered, watched or not: lane_created, then the entry's message_start,
    // message_end, entry_added and stats.
    expect(body.seq).toBe(5);
    expect(body.snapshot).toMatchObject({ lane: "main", operation: null, queues: [], faulted: false });
    expect(body.snapshot.transcript.map((entry) => entry.type === "message" && entry.message.role === "user" && entry.message.content)).toEqual(["first"]);
  });
});

describe("queue", () => {
  it("POST queue admits steer, followUp and nextRun in order; DELETE cancels", async () => {
    const { key, lanePath } = await laneSetup("queue");
    const ids: string[] = [];
    for (const kind of ["steer", "followUp", "nextRun"] as const) {
      const queued = await call(`${lanePath}/queue`, { body: { kind, message: `${kind} text` }, token: key });
      expect(queued.status).toBe(201);
      ids.push((await queued.json<{ entryId: string }>()).entryId);
    }
    const withImage = await call(`${lanePath}/queue`, {
      body: { kind: "nextRun", message: "look", images: [{ type: "image", data: "aGk=", mimeType: "image/png" }] },
      token: key,
    });
    expect(withImage.status).toBe(201);
    const asMessage = await call(`${lanePath}/queue`, { body: { kind: "followUp", message: userMessage("as a message") }, token: key });
    expect(asMessage.status).toBe(201);
    const info: LaneExecutionInfo = await execution({ key, lanePath });
    expect(info.queues.map((item) => item.kind)).toEqual(["steer", "followUp", "nextRun", "nextRun", "followUp"]);
    expect(info.queues.slice(0, 3).map((item) => item.entryId)).toEqual(ids);
    const cancelled = await call(`${lanePath}/queue/${ids[0]}`, { method: "DELETE", token: key });
    expect(cancelled.status).toBe(200);
    expect(await cancelled.json()).toEqual({ result: "cancelled" });
    const again = await call(`${lanePath}/queue/${ids[0]}`, { method: "DELETE", token: key });
    expect(await again.json()).toEqual({ result: "not_found" });
    expect((await execution({ key, lanePath })).queues).toHaveLength(4);
  });

  it("a queued item consumed by a run answers already_consumed", async () => {
    const { key, lanePath } = await laneSetup("queue_consumed");
    const queued = await call(`${lanePath}/queue`, { body: { kind: "nextRun", message: "context for the next run" }, token: key });
    const { entryId } = await queued.json<{ entryId: string }>();
    const run = await call(`${lanePath}/prompt`, { body: { prompt: "go", wait: 10 }, token: key });
    expect(run.status).toBe(200);
    const cancel = await call(`${lanePath}/queue/${entryId}`, { method: "DELETE", token: key });
    expect(await cancel.json()).toEqual({ result: "already_consumed" });
  });

  it("an Idempotency-Key replays the enqueue instead of queueing twice", async () => {
    const { key, lanePath } = await laneSetup("queue_idem");
    const request = { body: { kind: "followUp", message: "once" }, token: key, headers: { "idempotency-key": "q-1" } };
    const first = await call(`${lanePath}/queue`, request);
    const second = await call(`${lanePath}/queue`, request);
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(second.headers.get("idempotency-replayed")).toBe("true");
    expect(await second.json()).toEqual(await first.json());
    expect((await execution({ key, lanePath })).queues).toHaveLength(1);
  });

  it("refuses invalid queue input: 400 for shapes, 422 InvalidMessage for empty or misplaced images", async () => {
    const { key, lanePath } = await laneSetup("queue_bad");
    const invalid = [
      await call(`${lanePath}/queue`, { body: { kind: "later", message: "x" }, token: key }),
      await call(`${lanePath}/queue`, { body: { kind: "steer" }, token: key }),
      await call(`${lanePath}/queue`, { body: { kind: "steer", message: 5 }, token: key }),
      await call(`${lanePath}/queue`, { body: { kind: "steer", message: "x", images: [{ type: "image" }] }, token: key }),
      await call(`${lanePath}/queue/not%20an%20id`, { method: "DELETE", token: key }),
    ];
    expect(invalid.map((r) => r.status)).toEqual([400, 400, 400, 400, 400]);
    const empty = await call(`${lanePath}/queue`, { body: { kind: "steer", message: "" }, token: key });
    expect(empty.status).toBe(422);
    expect(await errorCode(empty)).toBe("InvalidMessage");
    const images = await call(`${lanePath}/queue`, {
      body: { kind: "steer", message: assistantMessage("no"), images: [{ type: "image", data: "aGk=", mimeType: "image/png" }] },
      token: key,
    });
    expect(images.status).toBe(422);
    expect(await errorCode(images)).toBe("InvalidMessage");
  });
});

/** Every lane route (operation routes are covered in operations.test.ts). */
function laneRoutes(sessionPath: string): { method: string; path: string; body?: unknown }[] {
  const lane = `${sessionPath}/lanes/main`;
  return [
    { method: "GET", path: `${sessionPath}/lanes` },
    { method: "PUT", path: lane, body: {} },
    { method: "GET", path: lane },
    { method: "PATCH", path: `${lane}/config`, body: { thinkingLevel: "low" } },
    { method: "POST", path: `${lane}/entries`, body: { customType: "x" } },
    { method: "GET", path: `${lane}/snapshot` },
    { method: "POST", path: `${lane}/queue`, body: { kind: "steer", message: "x" } },
    { method: "DELETE", path: `${lane}/queue/0190aaaa-0000-7000-8000-000000000000` },
  ];
}

describe("lane routes: tenancy, authentication and bounds", () => {
  it("answer 401 without a key, 404 SessionNotFound for another tenant's or an unknown session", async () => {
    const { sessionPath } = await laneSetup("lane_owner");
    const bob = await newTenant("lane_bob");
    for (const route of laneRoutes(sessionPath)) {
      const anonymous = await call(route.path, { method: route.method, ...(route.body !== undefined && { body: route.body }) });
      expect(anonymous.status, `${route.method} ${route.path}`).toBe(401);
      const foreign = await call(route.path, { method: route.method, token: bob.key, ...(route.body !== undefined && { body: route.body }) });
      expect(foreign.status, `${route.method} ${route.path}`).toBe(404);
      expect(await errorCode(foreign)).toBe("SessionNotFound");
    }
    for (const route of laneRoutes("/v1/sessions/never_created")) {
      const missing = await call(route.path, { method: route.method, token: bob.key, ...(route.body !== undefined && { body: route.body }) });
      expect(missing.status, `${route.method} ${route.path}`).toBe(404);
      expect(await errorCode(missing)).toBe("SessionNotFound");
    }
  });

  it("answer 400 for invalid session ids and 413 for oversized bodies", async () => {
    const { key, sessionPath } = await laneSetup("lane_bounds");
    for (const route of laneRoutes("/v1/sessions/has:colon")) {
      const invalid = await call(route.path, { method: route.method, token: key, ...(route.body !== undefined && { body: route.body }) });
      expect(invalid.status, `${route.method} ${route.path}`).toBe(400);
      expect(await errorCode(invalid)).toBe("ValidationFailed");
    }
    const huge = "x".repeat(2 * 1024 * 1024);
    const oversized = [
      await call(`${sessionPath}/lanes/main`, { method: PUT, rawBody: JSON.stringify({ pad: huge }), token: key }),
      await call(`${sessionPath}/lanes/main/config`, { method: "PATCH", rawBody: JSON.stringify({ pad: huge }), token: key }),
      await call(`${sessionPath}/lanes/main/entries`, { rawBody: JSON.stringify({ customType: "x", data: huge }), token: key }),
      await call(`${sessionPath}/lanes/main/queue`, { rawBody: JSON.stringify({ kind: "steer", message: huge }), token: key }),
    ];
    expect(oversized.map((r) => r.status)).toEqual([413, 413, 413, 413]);
  });
});
