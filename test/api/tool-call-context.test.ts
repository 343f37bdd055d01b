import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { sessionMetadata } from "../../harness/session/builtin-addresses.ts";
import { TOOL_CALL_CONTEXT_META_KEY, type ToolCallContext } from "../../schema/tools.ts";
import { call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { mcpScope, registerMcpServer } from "./mcp-helpers.ts";
import { activate, ARGS_SCHEMA, prompt, putTool, settle, toolResults, webhook } from "./tool-api-helpers.ts";

// The call context (issue 32 item 4): every http tool request carries, inside its signed body, who
// is calling (tenant, session, lane, operation, call ids, the session's metadata), and every MCP
// `tools/call` carries the same object in `_meta`, so that one endpoint serving many sessions can
// verify and attribute each call. Against the real local webhook and MCP servers over HTTP.

type Setup = Awaited<ReturnType<typeof laneSetup>>;

async function setMetadata(setup: Setup, metadata: Record<string, string>): Promise<void> {
  await runInDurableObject(env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`), (instance: SessionObject) => instance.session().setValue(sessionMetadata, metadata));
}

/** A second lane of the session, so that the context is seen to name the lane that ran. */
async function sideLane(setup: Setup): Promise<Setup> {
  const created = await call(`${setup.sessionPath}/lanes/side`, { method: "PUT", token: setup.key });
  expect(created.status).toBe(201);
  return { ...setup, lanePath: `${setup.sessionPath}/lanes/side` };
}

describe("the call context of a tool call", () => {
  it("an http tool's request names tenant, session, lane, operation, call and the session's metadata, inside the signed body", async () => {
    const setup = await laneSetup("ctx_http");
    await setMetadata(setup, { user: "u_42", plan: "team" });
    const lane = await sideLane(setup);
    const hook = webhook("ctx_http");
    const created = await putTool(setup, "lookup", { kind: "http", description: "looks up", parameters: ARGS_SCHEMA, url: hook.hookUrl("echo") });
    expect(created.status).toBe(201);
    await hook.trust("echo", (await created.json<{ secret: string }>()).secret);
    await useScript(lane, [{ toolCalls: [{ name: "lookup", arguments: { question: "who?" } }] }, { text: "done" }]);
    await activate(lane, ["lookup"]);
    const operationId = await prompt(lane);
    expect((await settle(lane, operationId)).status).toBe("completed");

    const [received] = await hook.received();
    expect(received?.signatureValid).toBe(true);
    const body = received?.body;
    if (typeof body !== "object") throw new Error("the webhook got no JSON body");
    const [placed] = await toolResults(lane);
    const expected: ToolCallContext = {
      tenantId: setup.tenantId,
      sessionId: setup.sid,
      lane: "side",
      operationId,
      toolCallId: body.toolCallId,
      invocationId: body.invocationId,
      metadata: { user: "u_42", plan: "team" },
    };
    expect(body.context).toEqual(expected);
    // The ids in the context are the call's own: the placed result's entry id and tool call id.
    expect(placed).toMatchObject({ id: body.context?.invocationId, toolCallId: body.context?.toolCallId });
  });

  it("two sessions calling one endpoint are told apart by the context; a session without metadata sends {}", async () => {
    const hook = webhook("ctx_two");
    const sessions: string[] = [];
    for (const prefix of ["ctx_two_a", "ctx_two_b"]) {
      const setup = await laneSetup(prefix);
      const created = await putTool(setup, "lookup", { kind: "http", description: "looks up", parameters: ARGS_SCHEMA, url: hook.hookUrl(`echo-${prefix}`) });
      await hook.trust(`echo-${prefix}`, (await created.json<{ secret: string }>()).secret);
      await useScript(setup, [{ toolCalls: [{ name: "lookup", arguments: { question: prefix } }] }, { text: "done" }]);
      await activate(setup, ["lookup"]);
      expect((await settle(setup, await prompt(setup))).status).toBe("completed");
      sessions.push(setup.sid);
    }
    const contexts = (await hook.received()).map((received) => (typeof received.body === "object" ? received.body.context : undefined));
    expect(contexts.map((context) => context?.sessionId)).toEqual(sessions);
    expect(contexts.map((context) => context?.metadata)).toEqual([{}, {}]);
  });

  it("an MCP tools/call carries the same context in _meta, under the documented key", async () => {
    const setup = await laneSetup("ctx_mcp");
    await setMetadata(setup, { user: "u_7" });
    const scope = mcpScope("ctx_mcp");
    await registerMcpServer(setup, "srv", { url: scope.url, prefix: "" });
    await useScript(setup, [{ toolCalls: [{ name: "echo", arguments: { text: "hi" } }] }, { text: "done" }]);
    await activate(setup, ["echo"]);
    const operationId = await prompt(setup);
    expect((await settle(setup, operationId)).status).toBe("completed");

    const [request] = await scope.calls();
    const [placed] = await toolResults(setup);
    expect(request?.meta).toEqual({
      [TOOL_CALL_CONTEXT_META_KEY]: {
        tenantId: setup.tenantId,
        sessionId: setup.sid,
        lane: "main",
        operationId,
        toolCallId: placed?.toolCallId,
        invocationId: placed?.id,
        metadata: { user: "u_7" },
      },
    });
  });
});
