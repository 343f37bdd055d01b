import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { IDEMPOTENCY_REPLAY_MAX_BYTES, IdempotencyStore } from "../../durable-objects/rpc/idempotency.ts";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { LaneExecutionInfo } from "../../schema/lane.ts";
import { call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";

// A remembered answer is one SQLite row, and a row holds at most 2 MB: an answer larger than
// IDEMPOTENCY_REPLAY_MAX_BYTES is not remembered. A small marker is remembered instead, so a
// repeat of the request answers 409 IdempotencyReplayTooLarge (naming what the first request
// created) and never runs the request a second time.

type ErrorBody = { error: { code: string; message: string; details?: Record<string, unknown> } };

/** The store of a freshly created session's object (its schema holds the idempotency table). */
async function withStore<T>(prefix: string, work: (store: IdempotencyStore) => T): Promise<T> {
  const setup = await laneSetup(prefix);
  return runInDurableObject(env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`), (_instance: SessionObject, state) => work(new IdempotencyStore(state.storage.sql)));
}

describe("IdempotencyStore bounds what it remembers", () => {
  it("remembers an answer up to the bound verbatim", async () => {
    const body = JSON.stringify({ operationId: "op_1", text: "é".repeat((IDEMPOTENCY_REPLAY_MAX_BYTES - 64) / 2) });
    expect(new TextEncoder().encode(body).byteLength).toBeLessThanOrEqual(IDEMPOTENCY_REPLAY_MAX_BYTES);
    const claim = await withStore("idem_fits", (store) => {
      expect(store.claim("k", "h")).toEqual({ state: "claimed" });
      store.complete("k", "h", { status: 200, body });
      return store.claim("k", "h");
    });
    expect(claim).toEqual({ state: "replay", status: 200, body });
  });

  it("remembers a marker for an answer beyond the bound (beyond SQLite's 2 MB row too): the repeat is 409 with the ids it names", async () => {
    const body = JSON.stringify({ operationId: "op_big", status: "completed", text: "x".repeat(3 * 1024 * 1024) });
    const claim = await withStore("idem_big", (store) => {
      store.claim("k", "h");
      store.complete("k", "h", { status: 200, body });
      return store.claim("k", "h");
    });
    if (claim.state !== "replay") throw new Error(`expected a remembered answer, got ${claim.state}`);
    expect(claim.status).toBe(409);
    const marker: ErrorBody = JSON.parse(claim.body);
    expect(marker.error).toMatchObject({
      code: "IdempotencyReplayTooLarge",
      details: { status: 200, bytes: new TextEncoder().encode(body).byteLength, limit: IDEMPOTENCY_REPLAY_MAX_BYTES, operationId: "op_big" },
    });
  });

  it("a marker still answers a different body with a conflict", async () => {
    const claim = await withStore("idem_big_conflict", (store) => {
      store.claim("k", "h");
      store.complete("k", "h", { status: 201, body: `"${"y".repeat(IDEMPOTENCY_REPLAY_MAX_BYTES)}"` });
      return store.claim("k", "other");
    });
    expect(claim).toEqual({ state: "conflict" });
  });
});

describe("a creating POST whose answer is larger than the bound", () => {
  it("answers the first request, and its repeat with 409 IdempotencyReplayTooLarge naming the operation, running once", async () => {
    const setup = await laneSetup("idem_prompt");
    // A step appended in the object, past the API's 1 MiB body bound: a model's answer of 2.5 MB.
    await useScript(setup, [{ text: "z".repeat(2_500_000) }]);
    const request = { body: { prompt: "write a lot", wait: 30 }, token: setup.key, headers: { "idempotency-key": "big-answer" } };
    const first = await call(`${setup.lanePath}/prompt`, request);
    expect(first.status).toBe(200);
    const answer = await first.json<{ operationId: string; messages: unknown[] }>();
    const repeat = await call(`${setup.lanePath}/prompt`, request);
    expect(repeat.status).toBe(409);
    expect(repeat.headers.get("idempotency-replayed")).toBe("true");
    const refused = await repeat.json<ErrorBody>();
    expect(refused.error).toMatchObject({ code: "IdempotencyReplayTooLarge", details: { status: 200, operationId: answer.operationId } });
    expect(refused.error).toMatchObject({ requestId: repeat.headers.get("x-request-id") });
    const lane = await (await call(setup.lanePath, { token: setup.key })).json<LaneExecutionInfo>();
    expect(lane.lastOperationId).toBe(answer.operationId);
    const entries = await (await call(`${setup.sessionPath}/entries?type=message`, { token: setup.key })).json<{ items: unknown[] }>();
    expect(entries.items).toHaveLength(2);
  });
});
