import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { call } from "./helpers.ts";
import { execution, laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";
import { ARGS_SCHEMA, activate, prompt, putTool, resultTexts, settle } from "./tool-api-helpers.ts";

// A sequential batch whose client call stands ahead of another call, over the REST API
// (ARCHITECTURE D11): the run waits in the `tools` leaf for the client — without faulting the
// session's harness (which would seal the pass another lane is streaming), and across an eviction
// and the object's alarm — and the posted result lets the batch go on, one call at a time in
// source order.

describe("a sequential batch with a client call ahead of another call", () => {
  it("waits for the client while other lanes run, then continues the batch in source order", async () => {
    const setup = await laneSetup("tools_seq_client");
    const patched = await call(setup.sessionPath, { method: "PATCH", body: { settings: { toolExecution: "sequential" } }, token: setup.key });
    expect(patched.status).toBe(200);
    expect((await putTool(setup, "values_set", { kind: "builtin" })).status).toBe(201);
    expect((await putTool(setup, "ask_user", { kind: "client", description: "Asks the user", parameters: ARGS_SCHEMA })).status).toBe(201);
    // Script steps are taken in request order across lanes: side's slow answer, main's batch, main's answer.
    const slow = slowStep(40);
    await useScript(setup, [
      slow,
      {
        toolCalls: [
          { name: "values_set", arguments: { namespace: "app", key: "first", value: 1 } },
          { name: "ask_user", arguments: { question: "ok?" } },
          { name: "values_set", arguments: { namespace: "app", key: "second", value: 2 } },
        ],
      },
      { text: "thanks" },
    ]);
    await activate(setup, ["values_set", "ask_user"]);
    const side = { key: setup.key, lanePath: `${setup.sessionPath}/lanes/side` };
    expect((await call(side.lanePath, { method: "PUT", body: { model: { provider: "scripted", modelId: "script" } }, token: setup.key })).status).toBe(201);
    const stub = env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`);
    let faults = 0;
    await runInDurableObject(stub, async (instance: SessionObject) => {
      (await instance.harness()).events.on("fault", () => {
        faults++;
      });
    });

    // Another lane streams while the main lane's batch reaches its client call.
    const sideRun = await prompt(side);
    await untilAt(side, "assistant.effect_pending");
    const operationId = await prompt(setup);
    await untilAt(setup, "tools");
    const waiting = await clientRow(setup);
    expect(waiting).toMatchObject({ status: "running", executor: "client", toolName: "ask_user" });
    expect(faults).toBe(0);
    expect(await settle(side, sideRun)).toMatchObject({ status: "completed" });
    expect(await transcriptShape(side)).toEqual([["user", "go"], ["assistant", slow.text]]);
    // The call before the client call ran; the one after it has not.
    expect((await call(`${setup.sessionPath}/values/app/first`, { token: setup.key })).status).toBe(200);
    expect((await call(`${setup.sessionPath}/values/app/second`, { token: setup.key })).status).toBe(404);

    // The wait survives an eviction and the fresh object's alarm.
    await evictDurableObject(stub);
    await runDurableObjectAlarm(stub);
    expect((await execution(setup)).current?.at).toBe("tools");
    expect((await call(`${setup.sessionPath}/values/app/second`, { token: setup.key })).status).toBe(404);

    const posted = await call(`${setup.lanePath}/operations/${operationId}/tool-results/${waiting.toolCallId}`, { body: { content: [{ type: "text", text: "yes" }] }, token: setup.key });
    expect(posted.status).toBe(202);
    expect((await settle(setup, operationId)).status).toBe("completed");
    expect(await resultTexts(setup)).toEqual([
      { text: "Set app/first", isError: false },
      { text: "yes", isError: false },
      { text: "Set app/second", isError: false },
    ]);
    expect(await (await call(`${setup.sessionPath}/values/app/second`, { token: setup.key })).json()).toMatchObject({ value: 2 });
    expect(faults).toBe(0);
  });
});

/** Role and text of every message on the lane's branch, oldest first. */
async function transcriptShape(setup: { key: string; lanePath: string }): Promise<[string, string][]> {
  const snapshot = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: LaneSnapshot }>();
  return snapshot.snapshot.transcript.flatMap((entry): [string, string][] => {
    if (entry.type !== "message") return [];
    const { message } = entry;
    const content = "content" in message ? message.content : "";
    const text = typeof content === "string" ? content : content.map((block) => (block.type === "text" ? block.text : "")).join("");
    return [[message.role, text]];
  });
}

/** The waiting client call's row of the lane snapshot (bounded polling). */
async function clientRow(setup: { key: string; lanePath: string }) {
  for (let i = 0; i < 200; i++) {
    const snapshot = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: LaneSnapshot }>();
    const row = snapshot.snapshot.operation?.runningTools.find((candidate) => candidate.toolName === "ask_user");
    if (row) return row;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error("the client call never showed up in the snapshot");
}
