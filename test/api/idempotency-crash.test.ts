import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { IDEMPOTENCY_CLAIM_MS } from "../../durable-objects/rpc/idempotency.ts";
import type { Entry } from "../../schema/entries.ts";
import { sseReader } from "../helpers/sse-reader.ts";
import { adminToken, call, errorCode, newTenant } from "./helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";
import { connect, expectSnapshot, sessionObject, watchSetup } from "./watch-helpers.ts";

// An Idempotency-Key's request killed between its effect and its remembered answer (QUALITY R5
// under R1): the claim, the effect and the answer are separate steps, so the object can die after
// the effect is stored and before the answer is. The retry then waits out the claim and runs the
// request again; the effect receipt (durable-objects/rpc/idempotency.ts `once`), stored in the same
// batch as the effect, must make that second run answer the first effect instead of making another.

type Setup = Awaited<ReturnType<typeof laneSetup>>;

const stubOf = (setup: Setup) => env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`);

/**
 * Makes the session refuse to store any remembered answer, as if the process died right after
 * the effect: the request's answer is lost (the client sees a 5xx), its claim stays open.
 */
async function loseAnswers(setup: Setup): Promise<void> {
  await runInDurableObject(stubOf(setup), (_instance: SessionObject, state) => {
    state.storage.sql.exec(
      "CREATE TRIGGER lose_answers BEFORE UPDATE OF status ON idempotency WHEN NEW.status IS NOT NULL BEGIN SELECT RAISE(ABORT, 'the process died here'); END",
    );
  });
}

/** Kills every object, then lets the open claim lapse as the time of IDEMPOTENCY_CLAIM_MS would. */
async function killAndLapse(setup: Setup): Promise<void> {
  await abortAllDurableObjects();
  await runInDurableObject(stubOf(setup), (_instance: SessionObject, state) => {
    state.storage.sql.exec("DROP TRIGGER lose_answers");
    state.storage.sql.exec("UPDATE idempotency SET created_at = created_at - ?", IDEMPOTENCY_CLAIM_MS + 1000);
  });
}

async function branchEntries(setup: Setup): Promise<Entry[]> {
  const response = await call(`${setup.sessionPath}/branches/main/entries?order=oldestFirst&limit=1000`, { token: setup.key });
  expect(response.status).toBe(200);
  return (await response.json<{ items: Entry[] }>()).items;
}

const textOf = (entry: Entry): string => JSON.stringify(entry);

/** The lane's last operation, waited on until settled: its id. */
async function settledRun(setup: Setup): Promise<string> {
  const lane = await (await call(setup.lanePath, { token: setup.key })).json<{ lastOperationId: string | null }>();
  const operationId = lane.lastOperationId;
  if (!operationId) throw new Error(`No operation on the lane: ${JSON.stringify(lane)}`);
  const settled = await call(`${setup.lanePath}/operations/${operationId}?wait=30`, { token: setup.key });
  expect((await settled.json<{ state: string }>()).state).toBe("settled");
  return operationId;
}

describe("a request killed between its effect and its remembered answer", () => {
  it("POST …/queue: the retry after the claim lapsed answers the first entry, queued once", async () => {
    const setup = await laneSetup("idcrashq");
    await loseAnswers(setup);
    const request = { body: { kind: "nextRun", message: "marker-queue-once" }, token: setup.key, headers: { "idempotency-key": "queue-1" } };
    const first = await call(`${setup.lanePath}/queue`, request);
    expect(first.status).toBeGreaterThanOrEqual(500);
    // Before the claim lapses, a retry is told to wait (the first request may still be running).
    const early = await call(`${setup.lanePath}/queue`, request);
    expect(early.status).toBe(409);
    expect(await errorCode(early)).toBe("IdempotencyInProgress");

    await killAndLapse(setup);
    const retried = await call(`${setup.lanePath}/queue`, request);
    expect(retried.status).toBe(201);
    const { entryId } = await retried.json<{ entryId: string }>();
    const lane = await (await call(setup.lanePath, { token: setup.key })).json<{ queues: { entryId: string }[] }>();
    expect(lane.queues.map((item) => item.entryId)).toEqual([entryId]);
    // Now remembered: a third send replays the same answer.
    const replayed = await call(`${setup.lanePath}/queue`, request);
    expect(replayed.headers.get("idempotency-replayed")).toBe("true");
    expect(await replayed.json()).toEqual({ entryId });
  });

  it("POST …/operations (prompt): the retry answers the operation the first one accepted, which ran once", async () => {
    const setup = await laneSetup("idcrashp");
    await useScript(setup, [{ text: "answered once" }, { text: "a second run would say this" }]);
    await loseAnswers(setup);
    const request = { body: { kind: "prompt", prompt: "marker-prompt-once" }, token: setup.key, headers: { "idempotency-key": "prompt-1" } };
    const first = await call(`${setup.lanePath}/operations`, request);
    expect(first.status).toBeGreaterThanOrEqual(500);

    await killAndLapse(setup);
    const retried = await call(`${setup.lanePath}/operations`, request);
    expect(retried.status).toBe(202);
    const { operationId } = await retried.json<{ operationId: string }>();
    const settled = await call(`${setup.lanePath}/operations/${operationId}?wait=30`, { token: setup.key });
    expect((await settled.json<{ state: string }>()).state).toBe("settled");
    const entries = await branchEntries(setup);
    expect(entries.filter((entry) => textOf(entry).includes("marker-prompt-once"))).toHaveLength(1);
    expect(entries.filter((entry) => textOf(entry).includes("a second run would say this"))).toHaveLength(0);
  });

  it("POST …/prompt (accept and wait): the retry waits on the first run and answers its record", async () => {
    const setup = await laneSetup("idcrashw");
    await useScript(setup, [{ text: "the only answer" }, { text: "a second run would say this" }]);
    await loseAnswers(setup);
    const request = { body: { prompt: "marker-wait-once" }, token: setup.key, headers: { "idempotency-key": "prompt-wait-1" } };
    expect((await call(`${setup.lanePath}/prompt`, request)).status).toBeGreaterThanOrEqual(500);

    await killAndLapse(setup);
    const retried = await call(`${setup.lanePath}/prompt`, request);
    expect(retried.status).toBe(200);
    expect(JSON.stringify(await retried.json())).toContain("the only answer");
    const entries = await branchEntries(setup);
    expect(entries.filter((entry) => textOf(entry).includes("marker-wait-once"))).toHaveLength(1);
    expect(entries.filter((entry) => textOf(entry).includes("a second run would say this"))).toHaveLength(0);
  });

  it("POST …/prompt streamed: the retry of a run that ended meanwhile streams its result at once, the run's once", async () => {
    const setup = await laneSetup("idcrashs");
    await useScript(setup, [{ text: "the streamed answer" }, { text: "a second run would say this" }]);
    await loseAnswers(setup);
    const request = { body: { prompt: "marker-stream-once" }, token: setup.key, headers: { "idempotency-key": "prompt-stream-1" } };
    expect((await call(`${setup.lanePath}/prompt`, request)).status).toBeGreaterThanOrEqual(500);
    await killAndLapse(setup);
    // The run the first request accepted ran on (recovered after the kill) and ended: its run_end
    // went out before the retry's relay was there to hear it.
    const operationId = await settledRun(setup);

    const response = await exports.default.fetch(`http://api.test${setup.lanePath}/prompt`, {
      method: "POST",
      headers: { authorization: `Bearer ${setup.key}`, "content-type": "application/json", accept: "text/event-stream", "idempotency-key": "prompt-stream-1" },
      body: JSON.stringify(request.body),
    });
    expect(response.status).toBe(200);
    if (!response.body) throw new Error("no body");
    const items = await sseReader(response.body).until((item) => item.event === "result");
    const result = JSON.parse(items.at(-1)?.data ?? "null");
    expect(result).toMatchObject({ operationId, status: "completed" });
    expect(JSON.stringify(result)).toContain("the streamed answer");
    const entries = await branchEntries(setup);
    expect(entries.filter((entry) => textOf(entry).includes("marker-stream-once"))).toHaveLength(1);
    expect(entries.filter((entry) => textOf(entry).includes("a second run would say this"))).toHaveLength(0);
  });

  it("POST …/entries and a list append: the retry answers the first entry and seq, written once", async () => {
    const setup = await laneSetup("idcrashe");
    await loseAnswers(setup);
    const append = { body: { message: { role: "user", content: "marker-entry-once" } }, token: setup.key, headers: { "idempotency-key": "entry-1" } };
    expect((await call(`${setup.lanePath}/entries`, append)).status).toBeGreaterThanOrEqual(500);
    const item = { body: { n: 1 }, token: setup.key, headers: { "idempotency-key": "item-1" } };
    expect((await call(`${setup.sessionPath}/lists/app/items`, item)).status).toBeGreaterThanOrEqual(500);

    await killAndLapse(setup);
    const retried = await call(`${setup.lanePath}/entries`, append);
    expect(retried.status).toBe(201);
    const { entryId } = await retried.json<{ entryId: string }>();
    const entries = (await branchEntries(setup)).filter((entry) => textOf(entry).includes("marker-entry-once"));
    expect(entries.map((entry) => entry.id)).toEqual([entryId]);

    const appended = await call(`${setup.sessionPath}/lists/app/items`, item);
    expect(appended.status).toBe(201);
    const list = await (await call(`${setup.sessionPath}/lists/app/items`, { token: setup.key })).json<{ items: unknown[] }>();
    expect(list.items).toHaveLength(1);
  });
});

describe("a socket command killed between its effect and its remembered reply", () => {
  it("a queue frame repeated by id on a new socket after the claim lapsed answers the first entry, queued once", async () => {
    const setup = await watchSetup("idcrashws");
    await runInDurableObject(setup.stub, (_instance: SessionObject, state) => {
      state.storage.sql.exec(
        "CREATE TRIGGER lose_answers BEFORE UPDATE OF status ON idempotency WHEN NEW.status IS NOT NULL BEGIN SELECT RAISE(ABORT, 'the process died here'); END",
      );
    });
    const frame = JSON.stringify({ type: "queue", id: "q-once", kind: "nextRun", message: "marker-socket-once" });
    const first = await connect<unknown>(`${setup.sessionPath}/lanes/main/watch`, setup.key);
    await expectSnapshot(first);
    first.send(frame);
    // The reply is lost with the "process": wait until the effect is visible, then kill.
    await pollUntil(async () => (await laneQueues(setup)).length === 1);
    await abortAllDurableObjects();
    await runInDurableObject(sessionObject(setup.tenantId, setup.sessionId), (_instance: SessionObject, state) => {
      state.storage.sql.exec("DROP TRIGGER lose_answers");
      state.storage.sql.exec("UPDATE idempotency SET created_at = created_at - ?", IDEMPOTENCY_CLAIM_MS + 1000);
    });

    const second = await connect<unknown>(`${setup.sessionPath}/lanes/main/watch`, setup.key);
    await expectSnapshot(second);
    second.send(frame);
    const read = await second.until((message) => v.safeParse(QueueReplySchema, message).success);
    const reply = v.parse(QueueReplySchema, read.at(-1));
    expect(reply.status).toBe(201);
    expect((await laneQueues(setup)).map((item) => item.entryId)).toEqual([reply.body.entryId]);
  });
});

const QueueReplySchema = v.object({ type: v.literal("reply"), id: v.literal("q-once"), status: v.number(), body: v.object({ entryId: v.string() }) });

async function laneQueues(setup: { sessionPath: string; key: string }): Promise<{ entryId: string }[]> {
  const lane = await (await call(`${setup.sessionPath}/lanes/main`, { token: setup.key })).json<{ queues: { entryId: string }[] }>();
  return lane.queues;
}

async function pollUntil(condition: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the condition never held");
}

describe("a tenant-level creation killed between its effect and its remembered answer", () => {
  it("POST /v1/admin/tenants/{id}/keys: the retry names the key the first request created (409 KeySecretNotReplayed), minting no second key", async () => {
    const { tenantId } = await newTenant("idcrashk");
    // One keyed admin request first: the admin's idempotency table exists from then on.
    expect((await call(`/v1/admin/tenants/${tenantId}/keys`, { body: { name: "warm" }, token: adminToken(), headers: { "idempotency-key": "idcrashk-warm" } })).status).toBe(201);
    const admin = env.TENANTS.getByName("admin:idempotency");
    const trigger = "CREATE TRIGGER lose_answers BEFORE UPDATE OF status ON idempotency WHEN NEW.status IS NOT NULL AND NEW.key LIKE '%idcrashk-key%' BEGIN SELECT RAISE(ABORT, 'the process died here'); END";
    await runInDurableObject(admin, (_instance: TenantObject, state) => {
      state.storage.sql.exec(trigger);
    });
    const keys = async (): Promise<string[]> => {
      const listed = await call(`/v1/admin/tenants/${tenantId}/keys`, { token: adminToken() });
      return (await listed.json<{ items: { keyId: string }[] }>()).items.map((key) => key.keyId);
    };
    const before = await keys();
    const request = { body: { name: "ci" }, token: adminToken(), headers: { "idempotency-key": "idcrashk-key" } };
    expect((await call(`/v1/admin/tenants/${tenantId}/keys`, request)).status).toBeGreaterThanOrEqual(500);
    const created = (await keys()).filter((keyId) => !before.includes(keyId));
    expect(created).toHaveLength(1);

    await abortAllDurableObjects();
    await runInDurableObject(env.TENANTS.getByName("admin:idempotency"), (_instance: TenantObject, state) => {
      state.storage.sql.exec("DROP TRIGGER lose_answers");
      state.storage.sql.exec("UPDATE idempotency SET created_at = created_at - ? WHERE key LIKE '%idcrashk-key%'", IDEMPOTENCY_CLAIM_MS + 1000);
    });
    const retried = await call(`/v1/admin/tenants/${tenantId}/keys`, request);
    expect(retried.status).toBe(409);
    expect(await retried.json()).toMatchObject({ error: { code: "KeySecretNotReplayed", details: { keyId: created[0] } } });
    expect((await keys()).filter((keyId) => !before.includes(keyId))).toEqual(created);
  });
});

describe("an abort's answer lost to a kill", () => {
  it("POST …/abort with an Idempotency-Key: the repeat answers the steers the abort handed back, which exist nowhere else", async () => {
    const setup = await laneSetup("idcrasha");
    await useScript(setup, [slowStep(400)]);
    const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "talk for a while" }, token: setup.key });
    expect(accepted.status).toBe(202);
    const { operationId } = await accepted.json<{ operationId: string }>();
    await untilAt(setup, "assistant.effect_pending");
    expect((await call(`${setup.lanePath}/queue`, { body: { kind: "steer", message: "marker-handed-back" }, token: setup.key })).status).toBe(201);
    await loseAnswers(setup);
    const abort = { method: "POST", token: setup.key, headers: { "idempotency-key": "abort-1" } };
    expect((await call(`${setup.lanePath}/abort?wait=0`, abort)).status).toBeGreaterThanOrEqual(500);

    await killAndLapse(setup);
    const retried = await call(`${setup.lanePath}/abort?wait=0`, abort);
    expect(retried.status).toBe(200);
    const answer = await retried.json<{ operationId: string; steer: unknown[] }>();
    expect(answer.operationId).toBe(operationId);
    expect(JSON.stringify(answer.steer)).toContain("marker-handed-back");
    const settled = await call(`${setup.lanePath}/operations/${operationId}?wait=30`, { token: setup.key });
    expect(await settled.json()).toMatchObject({ state: "settled", result: { status: "aborted" } });
    expect((await branchEntries(setup)).filter((entry) => textOf(entry).includes("marker-handed-back"))).toHaveLength(0);
  });
});
