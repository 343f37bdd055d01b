import { env } from "cloudflare:workers";
import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { uuidv7Ids } from "../../harness/session/ids.ts";
import type { Entry } from "../../schema/entries.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { call, errorCode, newTenant } from "./helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";
import { objectOf } from "./session-helpers.ts";

// Spec "Prompt while busy" through the API: `ifBusy` on POST …/operations and …/prompt; pending
// runs listed, viewed, cancelled, bounded, started in order and exactly once across a kill; an
// interrupt's answer carries what it drained; steer and followUp answer the running operation
// and free the slot they reserved.

type Setup = Awaited<ReturnType<typeof laneSetup>>;

async function snapshotLines(setup: Setup): Promise<string[]> {
  const body = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: LaneSnapshot }>();
  return body.snapshot.transcript.flatMap((entry: Entry) => {
    if (entry.type !== "message") return [];
    const { message } = entry;
    if (message.role === "user") return [`user: ${typeof message.content === "string" ? message.content : "[blocks]"}`];
    if (message.role === "assistant") return [`assistant: ${message.content.map((block) => (block.type === "text" ? block.text : "")).join("")}`];
    return [];
  });
}

/** Whether the tenant's open-operation slots all came back (releases arrive after the commits that settle). */
async function slotsFreed(setup: Setup): Promise<boolean> {
  for (let attempt = 0; attempt < 400; attempt++) {
    if ((await env.TENANTS.getByName(setup.tenantId).openOperationCount()) === 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return false;
}

const post = (setup: Setup, path: string, body: object) => call(`${setup.lanePath}${path}`, { body, token: setup.key });

async function busyLane(prefix: string, after: { text: string }[]): Promise<{ setup: Setup; first: string }> {
  const setup = await laneSetup(prefix);
  await useScript(setup, [slowStep(), ...after]);
  const accepted = await post(setup, "/operations", { kind: "prompt", prompt: "first" });
  expect(accepted.status).toBe(202);
  const { operationId } = await accepted.json<{ operationId: string }>();
  await untilAt(setup, "assistant.effect_pending");
  return { setup, first: operationId };
}

describe("ifBusy: enqueue", () => {
  it("a pending run is answered with its place, listed, viewed as pending, and runs after the first, in order", async () => {
    const { setup, first } = await busyLane("pwbq", [{ text: "second answer" }, { text: "third answer" }]);
    const second = await post(setup, "/operations", { kind: "prompt", prompt: "second", ifBusy: "enqueue" });
    expect(second.status).toBe(202);
    const secondBody = await second.json<{ operationId: string; state: string; position: number }>();
    expect(secondBody).toMatchObject({ kind: "run", state: "pending", position: 1, acceptedAt: expect.any(Number) });
    const third = await post(setup, "/operations", { kind: "prompt", prompt: "third", ifBusy: "enqueue" });
    const thirdId = (await third.json<{ operationId: string }>()).operationId;

    const view = await call(`${setup.lanePath}/operations/${thirdId}`, { token: setup.key });
    expect(await view.json()).toEqual({ state: "pending", position: 2 });
    const listed = await (await call(`${setup.lanePath}/pending`, { token: setup.key })).json<{ items: { operationId: string; position: number }[] }>();
    expect(listed.items.map((run) => [run.operationId, run.position])).toEqual([
      [secondBody.operationId, 1],
      [thirdId, 2],
    ]);

    // Waiting on the last one covers its time in line.
    const waited = await call(`${setup.lanePath}/operations/${thirdId}?wait=30`, { token: setup.key });
    expect(await waited.json()).toMatchObject({ state: "settled", result: { operationId: thirdId, status: "completed" } });
    for (const id of [first, secondBody.operationId]) {
      expect(await (await call(`${setup.lanePath}/operations/${id}`, { token: setup.key })).json()).toMatchObject({ state: "settled", result: { status: "completed" } });
    }
    expect(await snapshotLines(setup)).toEqual(["user: first", `assistant: ${slowStep().text}`, "user: second", "assistant: second answer", "user: third", "assistant: third answer"]);
    expect((await (await call(`${setup.lanePath}/pending`, { token: setup.key })).json<{ items: unknown[] }>()).items).toEqual([]);
    // Every slot came back.
    expect(await slotsFreed(setup)).toBe(true);
  });

  it("POST …/prompt with ifBusy enqueue waits for its own run and answers its record and messages", async () => {
    const { setup } = await busyLane("pwbp", [{ text: "queued answer" }]);
    const answered = await post(setup, "/prompt", { prompt: "queued", ifBusy: "enqueue", wait: 30 });
    expect(answered.status).toBe(200);
    const body = await answered.json<{ status: string; messages: { role: string }[] }>();
    expect(body).toMatchObject({ status: "completed", kind: "run" });
    expect(body.messages.at(-1)).toMatchObject({ role: "assistant", content: [{ type: "text", text: "queued answer" }] });
  });

  it("a pending run cancelled through its abort is recorded aborted (cancelled_before_start) and never runs", async () => {
    const { setup, first } = await busyLane("pwbc", [{ text: "never" }]);
    const pending = await (await post(setup, "/operations", { kind: "prompt", prompt: "cancel me", ifBusy: "enqueue" })).json<{ operationId: string }>();
    const aborted = await call(`${setup.lanePath}/operations/${pending.operationId}/abort`, { method: "POST", token: setup.key });
    expect(aborted.status).toBe(200);
    expect(await aborted.json()).toMatchObject({ operationId: pending.operationId, newlyRequested: true });
    const view = await (await call(`${setup.lanePath}/operations/${pending.operationId}`, { token: setup.key })).json();
    expect(view).toMatchObject({ state: "settled", result: { status: "aborted", error: { code: "cancelled_before_start" } } });
    await call(`${setup.lanePath}/operations/${first}?wait=30`, { token: setup.key });
    expect(await snapshotLines(setup)).toEqual(["user: first", `assistant: ${slowStep().text}`]);
    expect(await slotsFreed(setup)).toBe(true);
  });

  it("the 21st pending run is 409 QueueFull and writes nothing; a bad ifBusy is 400", async () => {
    const { setup } = await busyLane("pwbf", []);
    for (let index = 0; index < 20; index++) expect((await post(setup, "/operations", { kind: "prompt", prompt: `p${index}`, ifBusy: "enqueue" })).status).toBe(202);
    const full = await post(setup, "/operations", { kind: "prompt", prompt: "one more", ifBusy: "enqueue" });
    expect(full.status).toBe(409);
    expect(await errorCode(full)).toBe("QueueFull");
    const bad = await post(setup, "/prompt", { prompt: "x", ifBusy: "sometimes" });
    expect(bad.status).toBe(400);
    expect((await (await call(`${setup.lanePath}/pending`, { token: setup.key })).json<{ items: unknown[] }>()).items).toHaveLength(20);
  });

  it("a pending run survives the object being killed and starts exactly once, after the run before it", async () => {
    const { setup, first } = await busyLane("pwbk", [{ text: "after the kill" }, { text: "pending answer" }, { text: "spare" }]);
    const pending = await (await post(setup, "/operations", { kind: "prompt", prompt: "survivor", ifBusy: "enqueue" })).json<{ operationId: string }>();
    await evictDurableObject(objectOf(setup.tenantId, setup.sid));
    // The restarted object's alarm drives the interrupted run; its settlement starts the pending one.
    await runDurableObjectAlarm(objectOf(setup.tenantId, setup.sid));
    const waited = await call(`${setup.lanePath}/operations/${pending.operationId}?wait=30`, { token: setup.key });
    const settled = await waited.json<{ state: string; result: { status: string; startedAt: number } }>();
    expect(settled).toMatchObject({ state: "settled", result: { status: "completed" } });
    const firstRecord = await (await call(`${setup.lanePath}/operations/${first}`, { token: setup.key })).json<{ result: { endedAt: number } }>();
    expect(settled.result.startedAt).toBeGreaterThanOrEqual(firstRecord.result.endedAt);
    // Its prompt placed once, answered last.
    const lines = await snapshotLines(setup);
    expect(lines.filter((line) => line === "user: survivor")).toHaveLength(1);
    expect(lines.at(-2)).toBe("user: survivor");
    expect(lines.at(-1)).toMatch(/^assistant: /);
  });
});

describe("ifBusy: interrupt, steer, followUp", () => {
  it("interrupt aborts the running operation, answers its own run with what it drained", async () => {
    const { setup, first } = await busyLane("pwbi", [{ text: "interrupting answer" }]);
    expect((await post(setup, "/queue", { kind: "steer", message: "an unused steer" })).status).toBe(201);
    const answered = await post(setup, "/prompt", { prompt: "stop and do this", ifBusy: "interrupt", wait: 30 });
    expect(answered.status).toBe(200);
    const body = await answered.json<{ status: string; interrupted: { operationId: string; steer: { content: string }[] } }>();
    expect(body).toMatchObject({ status: "completed", interrupted: { operationId: first, steer: [{ role: "user", content: "an unused steer" }], followUp: [] } });
    const firstView = await (await call(`${setup.lanePath}/operations/${first}`, { token: setup.key })).json();
    expect(firstView).toMatchObject({ state: "settled", result: { status: "aborted" } });
    expect((await snapshotLines(setup)).slice(-2)).toEqual(["user: stop and do this", "assistant: interrupting answer"]);
  });

  it("steer and followUp hand the prompt to the running operation, answer its id and free the slot; idle, they start a run", async () => {
    const { setup, first } = await busyLane("pwbs", [{ text: "after steer" }, { text: "after follow-up" }, { text: "idle answer" }]);
    const steered = await post(setup, "/prompt", { prompt: "steer this way", ifBusy: "steer" });
    expect(steered.status).toBe(200);
    expect(await steered.json()).toEqual({ operationId: first, entryId: expect.any(String), queued: "steer" });
    const followed = await post(setup, "/operations", { kind: "prompt", prompt: "and then this", ifBusy: "followUp" });
    expect(followed.status).toBe(202);
    expect(await followed.json()).toMatchObject({ operationId: first, queued: "followUp" });
    await call(`${setup.lanePath}/operations/${first}?wait=30`, { token: setup.key });
    expect(await slotsFreed(setup)).toBe(true);
    const idle = await post(setup, "/prompt", { prompt: "idle now", ifBusy: "steer", wait: 30 });
    expect(idle.status).toBe(200);
    expect(await idle.json()).toMatchObject({ status: "completed" });
  });

  it("another tenant sees none of a lane's pending runs; a repeated Idempotency-Key answers the same pending run", async () => {
    const { setup } = await busyLane("pwbt", []);
    const key = `idem-${uuidv7Ids.next()}`;
    const first = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "once", ifBusy: "enqueue" }, token: setup.key, headers: { "idempotency-key": key } });
    const again = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "once", ifBusy: "enqueue" }, token: setup.key, headers: { "idempotency-key": key } });
    expect(first.status).toBe(202);
    expect(await again.json()).toEqual(await first.json());
    expect((await (await call(`${setup.lanePath}/pending`, { token: setup.key })).json<{ items: unknown[] }>()).items).toHaveLength(1);
    const other = await newTenant("pwbt2");
    const foreign = await call(`${setup.lanePath}/pending`, { token: other.key });
    expect(foreign.status).toBe(404);
  });
});
