import { describe, expect, it } from "vitest";
import { uuidv7Ids } from "../../harness/session/ids.ts";
import type { Entry } from "../../schema/entries.ts";
import type { LaneSnapshot, OperationResultRecord } from "../../schema/lane.ts";
import type { PromptAnswer } from "../../schema/lane-answers.ts";
import type { AgentMessage } from "../../schema/messages.ts";
import { call, errorCode, newTenant } from "./helpers.ts";
import { execution, laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";

// Operations through the real Hono app (spec/API.md "Operations: primitives" and the prompt /
// abort / resume conveniences), with the scripted models. No timing assertions: slow steps only
// give the test a window to act while the provider streams.

type Settled = { state: "settled"; result: OperationResultRecord };

function text(message: AgentMessage): string {
  if (message.role !== "user" && message.role !== "assistant") return message.role;
  if (typeof message.content === "string") return message.content;
  return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

function transcript(entries: Entry[]): string[] {
  return entries.map((entry) => (entry.type === "message" ? `${entry.message.role}: ${text(entry.message)}` : entry.type));
}

async function snapshot(setup: { key: string; lanePath: string }): Promise<LaneSnapshot> {
  const response = await call(`${setup.lanePath}/snapshot`, { token: setup.key });
  expect(response.status).toBe(200);
  return (await response.json<{ seq: number; snapshot: LaneSnapshot }>()).snapshot;
}

describe("prompt convenience", () => {
  it("create session → PUT lane → prompt with wait → the settled record; the snapshot shows the transcript", async () => {
    const setup = await laneSetup("flow");
    const response = await call(`${setup.lanePath}/prompt`, { body: { prompt: "hello there", wait: 10 }, token: setup.key });
    expect(response.status).toBe(200);
    const { messages, messagesTruncated, ...record } = await response.json<PromptAnswer>();
    expect(record).toMatchObject({ kind: "run", status: "completed", fromTipId: null, operationId: expect.any(String) });
    expect({ roles: messages.map((message) => message.role), messagesTruncated }).toEqual({ roles: ["user", "assistant"], messagesTruncated: false });
    const snap = await snapshot(setup);
    expect(transcript(snap.transcript)).toEqual(["user: hello there", "assistant: hello there"]);
    expect(snap.tipId).toBe(record.tipId);
    expect(snap.lastResult).toEqual(record);
    const listed = await (await call(`${setup.sessionPath}/lanes`, { token: setup.key })).json<{ items: { name: string; tipId: string }[] }>();
    expect(listed).toEqual({ items: [{ name: "main", tipId: record.tipId, operation: null }], nextCursor: null });
  });

  it("answers 202 with the operation id when the wait runs out (wait 0); resume then drives it to its record", async () => {
    const setup = await laneSetup("prompt_wait0");
    await useScript(setup, [slowStep()]);
    const accepted = await call(`${setup.lanePath}/prompt`, { body: { prompt: "slow please", wait: 0 }, token: setup.key });
    expect(accepted.status).toBe(202);
    const { operationId } = await accepted.json<{ operationId: string }>();
    expect(operationId).toEqual(expect.any(String));
    const resumed = await call(`${setup.lanePath}/resume?wait=30`, { method: "POST", token: setup.key });
    expect(resumed.status).toBe(200);
    expect(await resumed.json()).toMatchObject({ operationId, status: "completed" });
    const idle = await call(`${setup.lanePath}/resume`, { method: "POST", token: setup.key });
    expect(idle.status).toBe(422);
    expect(await errorCode(idle)).toBe("NothingToResume");
  });

  it("refuses invalid prompt bodies with 400 and an empty prompt with 422 InvalidMessage", async () => {
    const setup = await laneSetup("prompt_bad");
    const invalid = [
      await call(`${setup.lanePath}/prompt`, { body: {}, token: setup.key }),
      await call(`${setup.lanePath}/prompt`, { body: { prompt: "x", wait: 61 }, token: setup.key }),
      await call(`${setup.lanePath}/prompt`, { body: { prompt: "x", wait: -1 }, token: setup.key }),
      await call(`${setup.lanePath}/prompt`, { body: { prompt: 1 }, token: setup.key }),
      await call(`${setup.lanePath}/prompt`, { body: { prompt: "x", kind: "prompt" }, token: setup.key }),
    ];
    expect(invalid.map((r) => r.status)).toEqual([400, 400, 400, 400, 400]);
    const empty = await call(`${setup.lanePath}/prompt`, { body: { prompt: "" }, token: setup.key });
    expect(empty.status).toBe(422);
    expect(await errorCode(empty)).toBe("InvalidMessage");
  });
});

describe("operation primitives", () => {
  it("POST operations → 202; GET ?wait=10 → settled; settled ids answer however old; unknown ids 404", async () => {
    const setup = await laneSetup("prim");
    const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "primitive" }, token: setup.key });
    expect(accepted.status).toBe(202);
    const admission = await accepted.json<{ operationId: string; kind: string; startedAt: number }>();
    expect(admission).toEqual({ operationId: expect.any(String), kind: "run", startedAt: expect.any(Number) });
    const waited = await call(`${setup.lanePath}/operations/${admission.operationId}?wait=10`, { token: setup.key });
    expect(waited.status).toBe(200);
    const settled = await waited.json<Settled>();
    expect(settled).toMatchObject({ state: "settled", result: { operationId: admission.operationId, status: "completed", kind: "run" } });
    const second = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "again" }, token: setup.key });
    const next = await second.json<{ operationId: string }>();
    await call(`${setup.lanePath}/operations/${next.operationId}?wait=10`, { token: setup.key });
    const old = await call(`${setup.lanePath}/operations/${admission.operationId}`, { token: setup.key });
    expect(await old.json()).toEqual(settled);
    const resumedSettled = await call(`${setup.lanePath}/operations/${admission.operationId}/resume`, { method: "POST", token: setup.key });
    expect(resumedSettled.status).toBe(200);
    expect(await resumedSettled.json()).toEqual(settled);
    const unknownId = uuidv7Ids.next(Date.now());
    for (const response of [
      await call(`${setup.lanePath}/operations/${unknownId}`, { token: setup.key }),
      await call(`${setup.lanePath}/operations/${unknownId}/resume`, { method: "POST", token: setup.key }),
    ]) {
      expect(response.status).toBe(404);
      expect(await errorCode(response)).toBe("OperationMismatch");
    }
    expect(transcript((await snapshot(setup)).transcript)).toEqual(["user: primitive", "assistant: primitive", "user: again", "assistant: again"]);
  });

  it("takes a caller's operation id and accepts the prompt as messages", async () => {
    const setup = await laneSetup("prim_id");
    const operationId = uuidv7Ids.next(Date.now());
    const accepted = await call(`${setup.lanePath}/operations`, {
      body: { kind: "prompt", prompt: [{ role: "user", content: "as messages", timestamp: 1 }], operationId },
      token: setup.key,
    });
    expect(accepted.status).toBe(202);
    expect(await accepted.json()).toMatchObject({ operationId });
    const waited = await call(`${setup.lanePath}/operations/${operationId}?wait=10`, { token: setup.key });
    expect(await waited.json()).toMatchObject({ state: "settled", result: { operationId, status: "completed" } });
    const reused = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "x", operationId }, token: setup.key });
    expect(reused.status).toBe(400);
    expect(await errorCode(reused)).toBe("InvalidOperationId");
  });

  it("refuses invalid requests: 400 shapes, 404 unknown skills and templates, 422 empty prompts, compaction and a navigation that does not move", async () => {
    const setup = await laneSetup("prim_bad");
    const path = `${setup.lanePath}/operations`;
    const invalid = [
      await call(path, { body: { kind: "dance" }, token: setup.key }),
      await call(path, { body: { prompt: "x" }, token: setup.key }),
      await call(path, { body: { kind: "prompt" }, token: setup.key }),
      await call(path, { body: { kind: "skill" }, token: setup.key }),
      await call(path, { body: { kind: "prompt_template", name: "t", args: "a" }, token: setup.key }),
      await call(path, { body: { kind: "navigation" }, token: setup.key }),
      await call(path, { rawBody: "[", token: setup.key }),
      await call(`${setup.lanePath}/operations/not%20an%20id`, { token: setup.key }),
      await call(`${setup.lanePath}/operations/${uuidv7Ids.next(Date.now())}?wait=61`, { token: setup.key }),
      await call(`${setup.lanePath}/operations/${uuidv7Ids.next(Date.now())}?wait=soon`, { token: setup.key }),
    ];
    expect(invalid.map((r) => r.status)).toEqual([400, 400, 400, 400, 400, 400, 400, 400, 400, 400]);
    const skill = await call(path, { body: { kind: "skill", name: "missing" }, token: setup.key });
    expect(skill.status).toBe(404);
    expect(await errorCode(skill)).toBe("UnknownSkill");
    const template = await call(path, { body: { kind: "prompt_template", name: "missing", args: ["a"] }, token: setup.key });
    expect(template.status).toBe(404);
    expect(await errorCode(template)).toBe("UnknownTemplate");
    const empty = await call(path, { body: { kind: "prompt", prompt: "" }, token: setup.key });
    expect(empty.status).toBe(422);
    expect(await errorCode(empty)).toBe("InvalidMessage");
    // An empty lane has nothing to compact.
    const compaction = await call(path, { body: { kind: "compaction" }, token: setup.key });
    expect(compaction.status).toBe(422);
    expect(await errorCode(compaction)).toBe("NothingToCompact");
    const summarized = await call(path, { body: { kind: "navigation", targetId: null, summarize: true }, token: setup.key });
    expect(summarized.status).toBe(422);
    expect(await errorCode(summarized)).toBe("InvalidNavigation");
    // The lane's tip is already the root: a navigation there is no move.
    const noMove = await call(path, { body: { kind: "navigation", targetId: null }, token: setup.key });
    expect(noMove.status).toBe(422);
    expect(await errorCode(noMove)).toBe("InvalidNavigation");
    expect((await execution(setup)).lastOperationId).toBeNull();
  });
});

describe("runs in flight", () => {
  it("a steer posted while a slow scripted run streams makes the run take another turn", async () => {
    const setup = await laneSetup("steer");
    await useScript(setup, [slowStep(), { text: "after the steer" }]);
    const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "start" }, token: setup.key });
    const { operationId } = await accepted.json<{ operationId: string }>();
    await untilAt(setup, "assistant.effect_pending");
    const steer = await call(`${setup.lanePath}/queue`, { body: { kind: "steer", message: "change course" }, token: setup.key });
    expect(steer.status).toBe(201);
    const waited = await call(`${setup.lanePath}/operations/${operationId}?wait=30`, { token: setup.key });
    expect(await waited.json()).toMatchObject({ state: "settled", result: { operationId, status: "completed" } });
    const lines = transcript((await snapshot(setup)).transcript);
    expect(lines).toEqual(["user: start", `assistant: ${slowStep().text}`, "user: change course", "assistant: after the steer"]);
    expect((await execution(setup)).queues).toEqual([]);
  });

  it("LaneBusy: a second acceptance while a run is open is 409; queued input is still admitted", async () => {
    const setup = await laneSetup("busy");
    await useScript(setup, [slowStep()]);
    const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "first" }, token: setup.key });
    const { operationId } = await accepted.json<{ operationId: string }>();
    for (const response of [
      await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "second" }, token: setup.key }),
      await call(`${setup.lanePath}/prompt`, { body: { prompt: "third", wait: 0 }, token: setup.key }),
    ]) {
      expect(response.status).toBe(409);
      expect(await errorCode(response)).toBe("LaneBusy");
    }
    const active = await call(`${setup.lanePath}/operations/${operationId}`, { token: setup.key });
    expect(await active.json()).toMatchObject({ state: "active", status: expect.stringMatching(/^(running|open)$/), at: expect.any(String) });
    const lanes = await (await call(`${setup.sessionPath}/lanes`, { token: setup.key })).json<{ items: { operation: { id: string } | null }[] }>();
    expect(lanes.items[0]?.operation?.id).toBe(operationId);
    const write = await call(`${setup.lanePath}/entries`, { body: { customType: "app.note" }, token: setup.key });
    expect(write.status).toBe(201);
    expect(await write.json()).toMatchObject({ placed: false });
    const done = await call(`${setup.lanePath}/operations/${operationId}?wait=30`, { token: setup.key });
    expect(await done.json()).toMatchObject({ state: "settled", result: { status: "completed" } });
  });

  it("abort convenience mid-run: the aborted record, with the drained steer and follow-up payloads", async () => {
    const setup = await laneSetup("abort_conv");
    await useScript(setup, [slowStep()]);
    const accepted = await call(`${setup.lanePath}/prompt`, { body: { prompt: "long task", wait: 0 }, token: setup.key });
    expect(accepted.status).toBe(202);
    const { operationId } = await accepted.json<{ operationId: string }>();
    await untilAt(setup, "assistant.effect_pending");
    await call(`${setup.lanePath}/queue`, { body: { kind: "steer", message: "steer payload" }, token: setup.key });
    await call(`${setup.lanePath}/queue`, { body: { kind: "followUp", message: "follow-up payload" }, token: setup.key });
    await call(`${setup.lanePath}/queue`, { body: { kind: "nextRun", message: "kept for later" }, token: setup.key });
    const aborted = await call(`${setup.lanePath}/abort?wait=30`, { method: "POST", token: setup.key });
    expect(aborted.status).toBe(200);
    const body = await aborted.json<{ operationId: string; newlyRequested: boolean; steer: AgentMessage[]; followUp: AgentMessage[]; record?: OperationResultRecord }>();
    expect(body).toMatchObject({ operationId, newlyRequested: true, record: { operationId, status: "aborted", kind: "run" } });
    expect(body.steer.map(text)).toEqual(["steer payload"]);
    expect(body.followUp.map(text)).toEqual(["follow-up payload"]);
    const info = await execution(setup);
    expect(info.current).toBeNull();
    expect(info.queues.map((item) => item.kind)).toEqual(["nextRun"]);
    const idle = await call(`${setup.lanePath}/abort`, { method: "POST", token: setup.key });
    expect(idle.status).toBe(422);
    expect(await errorCode(idle)).toBe("NoActiveOperation");
  });

  it("abort primitive: requestAbort(id), idempotent while aborting; a stale id is 409", async () => {
    const setup = await laneSetup("abort_prim");
    await useScript(setup, [slowStep()]);
    const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "to be aborted" }, token: setup.key });
    const { operationId } = await accepted.json<{ operationId: string }>();
    await untilAt(setup, "assistant.effect_pending");
    await call(`${setup.lanePath}/queue`, { body: { kind: "steer", message: "drained" }, token: setup.key });
    const first = await call(`${setup.lanePath}/operations/${operationId}/abort`, { method: "POST", token: setup.key });
    expect(first.status).toBe(200);
    const requested = await first.json<{ operationId: string; newlyRequested: boolean; steer: AgentMessage[]; followUp: AgentMessage[] }>();
    expect(requested).toMatchObject({ operationId, newlyRequested: true, followUp: [] });
    expect(requested.steer.map(text)).toEqual(["drained"]);
    const waited = await call(`${setup.lanePath}/operations/${operationId}?wait=30`, { token: setup.key });
    expect(await waited.json()).toMatchObject({ state: "settled", result: { operationId, status: "aborted" } });
    const stale = await call(`${setup.lanePath}/operations/${operationId}/abort`, { method: "POST", token: setup.key });
    expect(stale.status).toBe(409);
    expect(await errorCode(stale)).toBe("OperationMismatch");
    const unknown = await call(`${setup.lanePath}/operations/${uuidv7Ids.next(Date.now())}/abort`, { method: "POST", token: setup.key });
    expect(unknown.status).toBe(409);
  });
});

/** Every operation route. */
function operationRoutes(lanePath: string): { method: string; path: string; body?: unknown }[] {
  const id = "0190aaaa-0000-7000-8000-000000000000";
  return [
    { method: "POST", path: `${lanePath}/operations`, body: { kind: "prompt", prompt: "x" } },
    { method: "GET", path: `${lanePath}/operations/${id}` },
    { method: "POST", path: `${lanePath}/operations/${id}/abort` },
    { method: "POST", path: `${lanePath}/operations/${id}/resume` },
    { method: "POST", path: `${lanePath}/prompt`, body: { prompt: "x", wait: 0 } },
    { method: "POST", path: `${lanePath}/abort` },
    { method: "POST", path: `${lanePath}/resume` },
  ];
}

describe("operation routes: tenancy, authentication and bounds", () => {
  it("answer 401 without a key and 404 for another tenant's session; unknown lanes are 404 UnknownLane", async () => {
    const setup = await laneSetup("op_owner");
    const bob = await newTenant("op_bob");
    for (const route of operationRoutes(setup.lanePath)) {
      const withBody = route.body !== undefined ? { body: route.body } : {};
      const anonymous = await call(route.path, { method: route.method, ...withBody });
      expect(anonymous.status, `${route.method} ${route.path}`).toBe(401);
      const foreign = await call(route.path, { method: route.method, token: bob.key, ...withBody });
      expect(foreign.status, `${route.method} ${route.path}`).toBe(404);
      expect(await errorCode(foreign)).toBe("SessionNotFound");
    }
    for (const route of operationRoutes(`${setup.sessionPath}/lanes/nope`)) {
      const withBody = route.body !== undefined ? { body: route.body } : {};
      const missing = await call(route.path, { method: route.method, token: setup.key, ...withBody });
      expect(missing.status, `${route.method} ${route.path}`).toBe(404);
      expect(await errorCode(missing)).toBe("UnknownLane");
    }
    for (const route of operationRoutes(`${setup.sessionPath}/lanes/bad:lane`)) {
      const withBody = route.body !== undefined ? { body: route.body } : {};
      const invalid = await call(route.path, { method: route.method, token: setup.key, ...withBody });
      expect(invalid.status, `${route.method} ${route.path}`).toBe(400);
    }
    // Nothing ran on the owner's lane.
    expect((await execution(setup)).lastOperationId).toBeNull();
  });

  it("answer 413 for oversized bodies", async () => {
    const setup = await laneSetup("op_bounds");
    const huge = "x".repeat(2 * 1024 * 1024);
    const oversized = [
      await call(`${setup.lanePath}/operations`, { rawBody: JSON.stringify({ kind: "prompt", prompt: huge }), token: setup.key }),
      await call(`${setup.lanePath}/prompt`, { rawBody: JSON.stringify({ prompt: huge }), token: setup.key }),
    ];
    expect(oversized.map((r) => r.status)).toEqual([413, 413]);
    expect((await execution(setup)).lastOperationId).toBeNull();
  });
});
