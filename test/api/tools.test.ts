import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { LaneExecutionInfo, LaneSnapshot } from "../../schema/lane.ts";
import { call } from "./helpers.ts";
import { execution, laneSetup, untilAt, useScript } from "./lane-helpers.ts";
import { expectError } from "./session-helpers.ts";
import { ARGS_SCHEMA, prompt, putTool, resultTexts, settle } from "./tool-api-helpers.ts";

// Tools over the REST API (spec/API.md `…/tools/{name}`, `…/tool-results/{toolCallId}`):
// definitions are validated and bounded, activeTools must name defined tools, builtin tools run
// in a scripted run, and client tools wait for a posted result — across eviction, once, and
// cancelled by an abort.

describe("tool definitions", () => {
  it("PUT creates (201) and replaces (200); GET lists; an http tool's secret is answered once and never listed", async () => {
    const setup = await laneSetup("tools_crud");
    const created = await putTool(setup, "lookup", { kind: "http", description: "Looks things up", parameters: ARGS_SCHEMA, url: "https://tools.example.com/lookup", replay: "safe" });
    expect(created.status).toBe(201);
    const body = await created.json<{ secret: string; secretHint: string; replay: string }>();
    expect(body.secret).toMatch(/^tsk_/);
    expect(body.secretHint).toBe(`…${body.secret.slice(-4)}`);
    const replaced = await putTool(setup, "lookup", { kind: "http", description: "Looks things up, v2", parameters: ARGS_SCHEMA, url: "https://tools.example.com/v2" });
    expect(replaced.status).toBe(200);
    const replacedBody = await replaced.json<Record<string, unknown>>();
    expect(replacedBody.secret).toBeUndefined();
    expect(replacedBody.secretHint).toBe(body.secretHint);
    expect((await putTool(setup, "current_time", { kind: "builtin" })).status).toBe(201);
    const listed = await (await call(`${setup.sessionPath}/tools`, { token: setup.key })).json<{ items: Record<string, unknown>[] }>();
    expect(listed.items.map((item) => item.name)).toEqual(["current_time", "lookup"]);
    expect(JSON.stringify(listed)).not.toContain(body.secret);
    expect(listed.items[1]).toMatchObject({ kind: "http", description: "Looks things up, v2", url: "https://tools.example.com/v2", replay: "never" });
  });

  it("refuses bad definitions with clear 4xx codes and writes nothing", async () => {
    const setup = await laneSetup("tools_bad");
    await expectError(await putTool(setup, "bad name!", { kind: "builtin" }), 400, "ValidationFailed");
    await expectError(await putTool(setup, "nope", { kind: "builtin" }), 422, "UnknownTool");
    await expectError(await putTool(setup, "x", { kind: "client", description: "d", parameters: { type: "string" } }), 400, "ValidationFailed");
    await expectError(await putTool(setup, "x", { kind: "client", description: "d", parameters: { type: "object", properties: { a: { type: "nonsense" } } } }), 400, "ValidationFailed");
    await expectError(await putTool(setup, "x", { kind: "http", description: "d", parameters: ARGS_SCHEMA, url: "http://tools.example.com/" }), 400, "ValidationFailed");
    await expectError(await putTool(setup, "x", { kind: "http", description: "d", parameters: ARGS_SCHEMA, url: "ftp://127.0.0.1/" }), 400, "ValidationFailed");
    const huge = { type: "object", description: "x".repeat(20_000) };
    await expectError(await putTool(setup, "x", { kind: "client", description: "d", parameters: huge }), 400, "ValidationFailed");
    await expectError(await call(`${setup.sessionPath}/tools/x`, { method: "DELETE", token: setup.key }), 404, "ToolNotFound");
    const listed = await (await call(`${setup.sessionPath}/tools`, { token: setup.key })).json<{ items: unknown[] }>();
    expect(listed.items).toEqual([]);
  });

  it("activeTools must name defined tools; a tool active on a lane cannot be deleted (409 ToolInUse)", async () => {
    const setup = await laneSetup("tools_active");
    await expectError(await call(`${setup.lanePath}/config`, { method: "PATCH", body: { activeTools: ["current_time"] }, token: setup.key }), 422, "UnknownTool");
    expect((await putTool(setup, "current_time", { kind: "builtin" })).status).toBe(201);
    const patched = await call(`${setup.lanePath}/config`, { method: "PATCH", body: { activeTools: ["current_time"] }, token: setup.key });
    expect(patched.status).toBe(200);
    await expectError(await call(`${setup.sessionPath}/tools/current_time`, { method: "DELETE", token: setup.key }), 409, "ToolInUse");
    await call(`${setup.lanePath}/config`, { method: "PATCH", body: { activeTools: [] }, token: setup.key });
    expect((await call(`${setup.sessionPath}/tools/current_time`, { method: "DELETE", token: setup.key })).status).toBe(204);
  });
});

describe("builtin tools in a run", () => {
  it("a scripted run calls current_time, values_set and values_get; the results are placed and the run continues", async () => {
    const setup = await laneSetup("tools_builtin");
    for (const name of ["current_time", "values_set", "values_get", "fail"]) expect((await putTool(setup, name, { kind: "builtin" })).status).toBe(201);
    await useScript(setup, [
      { toolCalls: [{ name: "current_time", arguments: {} }, { name: "values_set", arguments: { namespace: "app", key: "k", value: { n: 1 } } }] },
      { toolCalls: [{ name: "values_get", arguments: { namespace: "app", key: "k" } }, { name: "fail", arguments: { message: "on purpose" } }] },
      { text: "done" },
    ]);
    await call(`${setup.lanePath}/config`, { method: "PATCH", body: { activeTools: ["current_time", "values_set", "values_get", "fail"] }, token: setup.key });
    const record = await settle(setup, await prompt(setup));
    expect(record.status).toBe("completed");
    const results = await resultTexts(setup);
    expect(results[0]?.text).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(results.slice(1)).toEqual([
      { text: "Set app/k", isError: false },
      { text: '{"n":1}', isError: false },
      { text: "on purpose", isError: true },
    ]);
    const stored = await (await call(`${setup.sessionPath}/values/app/k`, { token: setup.key })).json<{ value: unknown }>();
    expect(stored.value).toEqual({ n: 1 });
  });
});

describe("client tools", () => {
  async function clientSetup(prefix: string, timeoutMs?: number) {
    const setup = await laneSetup(prefix);
    expect((await putTool(setup, "ask_user", { kind: "client", description: "Asks the user", parameters: ARGS_SCHEMA, ...(timeoutMs && { timeoutMs }) })).status).toBe(201);
    await useScript(setup, [{ toolCalls: [{ name: "ask_user", arguments: { question: "ok?" } }] }, { text: "thanks" }]);
    await call(`${setup.lanePath}/config`, { method: "PATCH", body: { activeTools: ["ask_user"] }, token: setup.key });
    const operationId = await prompt(setup);
    await untilAt(setup, "tools");
    for (let i = 0; i < 200; i++) {
      const snapshot = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: LaneSnapshot }>();
      const row = snapshot.snapshot.operation?.runningTools[0];
      if (row) return { ...setup, operationId, row };
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    throw new Error("the client call never showed up in the snapshot");
  }

  it("the run waits with the call in the snapshot; a posted result settles it once (a second post is 409), even after eviction", async () => {
    const setup = await clientSetup("tools_client");
    expect(setup.row).toMatchObject({ status: "running", executor: "client", toolName: "ask_user", args: { question: "ok?" } });
    const info: LaneExecutionInfo = await execution(setup);
    expect(info.current?.at).toBe("tools");
    await evictDurableObject(env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`));
    expect((await execution(setup)).current?.at).toBe("tools");
    const path = `${setup.lanePath}/operations/${setup.operationId}/tool-results/${setup.row.toolCallId}`;
    await expectError(await call(path, { body: { content: "not an array" }, token: setup.key }), 400, "ValidationFailed");
    await expectError(await call(`${setup.lanePath}/operations/${setup.operationId}/tool-results/call_999`, { body: { content: [] }, token: setup.key }), 404, "UnknownToolCall");
    const posted = await call(path, { body: { content: [{ type: "text", text: "yes" }], details: { by: "user" } }, token: setup.key });
    expect(posted.status).toBe(202);
    // The second post is refused whatever it races with: 409 ToolResultConflict while the run has
    // not taken the first result, 409 OperationMismatch once the run already settled.
    const again = await call(path, { body: { content: [{ type: "text", text: "again" }] }, token: setup.key });
    expect(again.status).toBe(409);
    expect(["ToolResultConflict", "OperationMismatch"]).toContain((await again.json<{ error: { code: string } }>()).error.code);
    const record = await settle(setup, setup.operationId);
    expect(record.status).toBe("completed");
    expect(await resultTexts(setup)).toEqual([{ text: "yes", isError: false }]);
    await expectError(await call(path, { body: { content: [{ type: "text", text: "late" }] }, token: setup.key }), 409, "OperationMismatch");
  });

  it("with timeoutMs, an unanswered call ends with an error result at its deadline, across an eviction; a result posted after it is 409", async () => {
    const setup = await clientSetup("tools_client_deadline", 1000);
    // The deadline is durable: the object is evicted while the run waits, and its alarm ends the wait.
    await evictDurableObject(env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`));
    const record = await settle(setup, setup.operationId);
    expect(record.status).toBe("completed");
    expect(await resultTexts(setup)).toEqual([{ text: "No result was posted for ask_user in time.", isError: true }]);
    const path = `${setup.lanePath}/operations/${setup.operationId}/tool-results/${setup.row.toolCallId}`;
    await expectError(await call(path, { body: { content: [{ type: "text", text: "too late" }] }, token: setup.key }), 409, "OperationMismatch");
    expect(await resultTexts(setup)).toEqual([{ text: "No result was posted for ask_user in time.", isError: true }]);
  });

  it("an abort while the run waits settles the call as cancelled and ends the run aborted", async () => {
    const setup = await clientSetup("tools_client_abort");
    const aborted = await call(`${setup.lanePath}/operations/${setup.operationId}/abort`, { method: "POST", token: setup.key });
    expect(aborted.status).toBe(200);
    const record = await settle(setup, setup.operationId);
    expect(record.status).toBe("aborted");
    expect(await resultTexts(setup)).toEqual([{ text: "The tool call was cancelled before completion.", isError: true }]);
  });
});
