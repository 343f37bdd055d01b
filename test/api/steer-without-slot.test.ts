import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Entry } from "../../schema/entries.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { adminToken, call } from "./helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";
import { expectError } from "./session-helpers.ts";

// Spec "Prompt while busy": a `steer` or `followUp` handed to the running run opens no operation,
// so it needs no open-operation slot: a tenant whose quota the running run itself takes can still
// steer it (it was 429 RateLimited). A compaction or navigation takes no queued input, so a steer
// or follow-up arriving under one becomes a pending run, answered by its own run once the
// operation ends (it was queued, and then waited for some other prompt to be answered).

type Setup = Awaited<ReturnType<typeof laneSetup>>;

async function oneSlotTenantWithRunningLane(prefix: string): Promise<{ setup: Setup; first: string }> {
  const setup = await laneSetup(prefix);
  const quota = await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 1 }, token: adminToken() });
  expect(quota.status).toBe(200);
  await useScript(setup, [slowStep(), { text: "after the steer" }, { text: "spare" }]);
  const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "first" }, token: setup.key });
  expect(accepted.status).toBe(202);
  const { operationId } = await accepted.json<{ operationId: string }>();
  await untilAt(setup, "assistant.effect_pending");
  expect(await env.TENANTS.getByName(setup.tenantId).openOperationCount()).toBe(1);
  return { setup, first: operationId };
}

async function userPrompts(setup: Setup): Promise<string[]> {
  const body = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: LaneSnapshot }>();
  return body.snapshot.transcript.flatMap((entry: Entry) => (entry.type === "message" && entry.message.role === "user" && typeof entry.message.content === "string" ? [entry.message.content] : []));
}

describe("a steer or follow-up handed to the running run needs no slot", () => {
  it("POST …/prompt ifBusy steer at the quota: 200 queued on the running run, which answers it", async () => {
    const { setup, first } = await oneSlotTenantWithRunningLane("sws_p");
    const steered = await call(`${setup.lanePath}/prompt`, { body: { prompt: "steer this way", ifBusy: "steer" }, token: setup.key });
    const text = await steered.text();
    expect(steered.status, text).toBe(200);
    expect(JSON.parse(text)).toEqual({ operationId: first, entryId: expect.any(String), queued: "steer" });
    expect(await env.TENANTS.getByName(setup.tenantId).openOperationCount()).toBe(1);
    const settled = await (await call(`${setup.lanePath}/operations/${first}?wait=20`, { token: setup.key })).json();
    expect(settled).toMatchObject({ state: "settled", result: { status: "completed" } });
    expect(await userPrompts(setup)).toEqual(["first", "steer this way"]);
  });

  it("POST …/operations ifBusy followUp at the quota: 202 queued on the running run", async () => {
    const { setup, first } = await oneSlotTenantWithRunningLane("sws_o");
    const followed = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "and then this", ifBusy: "followUp" }, token: setup.key });
    const text = await followed.text();
    expect(followed.status, text).toBe(202);
    expect(JSON.parse(text)).toMatchObject({ operationId: first, queued: "followUp" });
  });

  it("a streamed steer at the quota streams just its result", async () => {
    const { setup, first } = await oneSlotTenantWithRunningLane("sws_s");
    const streamed = await call(`${setup.lanePath}/prompt`, { body: { prompt: "steer, streamed", ifBusy: "steer" }, token: setup.key, headers: { accept: "text/event-stream" } });
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get("content-type")).toContain("text/event-stream");
    const text = await streamed.text();
    const result = /^event: result\ndata: (.*)$/m.exec(text)?.[1];
    expect(JSON.parse(result ?? "null")).toEqual({ operationId: first, entryId: expect.any(String), queued: "steer" });
  });

  it("a useChat steer at the quota (POST …/ai-sdk, ifBusy steer) follows the running run's answer", async () => {
    const { setup, first } = await oneSlotTenantWithRunningLane("sws_a");
    const message = { id: "msg-steer-1", role: "user", parts: [{ type: "text", text: "steer through the chat" }] };
    const chat = () => call(`${setup.lanePath}/ai-sdk`, { body: { id: setup.sid, messages: [message], trigger: "submit-message", ifBusy: "steer" }, token: setup.key });
    const steered = await chat();
    const text = await steered.text();
    expect(steered.status, text).toBe(200);
    expect(text).toContain("after the steer");
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    const settled = await (await call(`${setup.lanePath}/operations/${first}?wait=20`, { token: setup.key })).json();
    expect(settled).toMatchObject({ state: "settled", result: { status: "completed" } });
    expect(await userPrompts(setup)).toEqual(["first", "steer through the chat"]);
    // The same message again is the same steer: it is not placed twice.
    const repeated = await chat();
    expect(repeated.status).toBe(200);
    await repeated.text();
    expect(await userPrompts(setup)).toEqual(["first", "steer through the chat"]);
  });

  it("on an idle lane a steer starts a run, so it takes a slot: 429 at the quota, nothing written", async () => {
    const { setup } = await oneSlotTenantWithRunningLane("sws_i");
    await call(`/v1/sessions/${setup.sid}/lanes/side`, { method: "PUT", token: setup.key });
    const refused = await call(`/v1/sessions/${setup.sid}/lanes/side/prompt`, { body: { prompt: "on the idle lane", ifBusy: "steer" }, token: setup.key });
    await expectError(refused, 429, "RateLimited");
    const side = await (await call(`/v1/sessions/${setup.sid}/lanes/side/snapshot`, { token: setup.key })).json<{ snapshot: LaneSnapshot }>();
    expect(side.snapshot.transcript).toEqual([]);
  });

  it("a bad key is 401 before a bad body's 400, and a bad body writes nothing", async () => {
    const { setup } = await oneSlotTenantWithRunningLane("sws_b");
    const badKey = await call(`${setup.lanePath}/prompt`, { body: { prompt: 7, ifBusy: "steer" }, token: `${setup.key}x` });
    expect(badKey.status).toBe(401);
    await expectError(await call(`${setup.lanePath}/prompt`, { body: { prompt: 7, ifBusy: "steer" }, token: setup.key }), 400, "ValidationFailed");
    expect(await userPrompts(setup)).toEqual(["first"]);
  });
});

describe("a steer or follow-up while a compaction runs", () => {
  it("becomes a pending run, answered by its own run once the compaction settles", async () => {
    const setup = await laneSetup("sws_c");
    const settings = { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } };
    expect((await call(`/v1/sessions/${setup.sid}`, { method: "PATCH", body: { settings }, token: setup.key })).status).toBe(200);
    // The compaction's summary may take two steps (the history's and a split turn's): spares follow.
    await useScript(setup, [{ text: "one back" }, { text: "two back" }, slowStep(), { text: "summary" }, { text: "answer" }, { text: "answer" }]);
    for (const prompt of ["one", "two"]) expect((await call(`${setup.lanePath}/prompt`, { body: { prompt }, token: setup.key })).status).toBe(200);

    const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "compaction" }, token: setup.key });
    expect(accepted.status).toBe(202);
    const { operationId: compaction } = await accepted.json<{ operationId: string }>();
    await untilAt(setup, "summary.effect_pending");

    const steered = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "please answer me", ifBusy: "steer" }, token: setup.key });
    expect(steered.status).toBe(202);
    const pending = await steered.json<{ operationId: string; state: string; position: number }>();
    expect(pending).toMatchObject({ kind: "run", state: "pending", position: 1 });
    expect(pending.operationId).not.toBe(compaction);

    const compacted = await (await call(`${setup.lanePath}/operations/${compaction}?wait=20`, { token: setup.key })).json();
    expect(compacted).toMatchObject({ state: "settled", result: { kind: "compaction", status: "completed" } });
    const answered = await (await call(`${setup.lanePath}/operations/${pending.operationId}?wait=20`, { token: setup.key })).json();
    expect(answered).toMatchObject({ state: "settled", result: { kind: "run", status: "completed" } });
    expect((await userPrompts(setup)).at(-1)).toBe("please answer me");
  });
});
