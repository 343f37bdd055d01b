import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { toolDefinition } from "../../tools/definitions.ts";
import { MAX_HTTP_TOOL_RESPONSE_BYTES } from "../../tools/http-tool.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { activate, ARGS_SCHEMA, prompt, putTool, resultTexts, settle, toolResults, webhook } from "./tool-api-helpers.ts";

// http tools (a tenant's webhook) against a real local webhook server over real HTTP
// (test/node/tool-webhook-server.ts, started by the pool's global setup): the webhook verifies
// every call's HMAC-SHA256 signature with the secret the creating PUT answered once, and records
// what it received. Whatever the webhook does wrong becomes an error result the model sees; the
// run always goes on.

async function httpToolLane(prefix: string, tools: Record<string, { behaviour: string; timeoutMs?: number; replay?: "safe" | "never" }>, trustSecret = true) {
  const setup = await laneSetup(prefix);
  const hook = webhook(prefix);
  const secrets: Record<string, string> = {};
  for (const [name, tool] of Object.entries(tools)) {
    const created = await putTool(setup, name, {
      kind: "http",
      description: `calls ${tool.behaviour}`,
      parameters: ARGS_SCHEMA,
      url: hook.hookUrl(tool.behaviour),
      ...(tool.timeoutMs !== undefined && { timeoutMs: tool.timeoutMs }),
      ...(tool.replay && { replay: tool.replay }),
    });
    expect(created.status).toBe(201);
    const { secret } = await created.json<{ secret: string }>();
    secrets[name] = secret;
    if (trustSecret) await hook.trust(tool.behaviour, secret);
  }
  const names = Object.keys(tools);
  await useScript(setup, [{ toolCalls: names.map((name) => ({ name, arguments: { question: `for ${name} — ünïcödé ✓` } })) }, { text: "carried on" }]);
  await activate(setup, names);
  return { setup, hook, secrets };
}

describe("http tools against a local webhook", () => {
  it("each call is a POST signed with the tool's secret (verified by the webhook) whose Idempotency-Key is the invocation id; the answer is the result", async () => {
    const { setup, hook, secrets } = await httpToolLane("http_echo", { lookup: { behaviour: "echo" } });
    const operationId = await prompt(setup);
    const record = await settle(setup, operationId);
    expect(record.status).toBe("completed");
    const received = await hook.received();
    expect(received).toHaveLength(1);
    const [only] = received;
    expect(only?.signatureValid).toBe(true);
    expect(only?.body).toMatchObject({ tool: "lookup", operationId, arguments: { question: "for lookup — ünïcödé ✓" } });
    const body = only?.body;
    if (typeof body !== "object") throw new Error("the webhook got no JSON body");
    expect(only?.idempotencyKey).toBe(body.invocationId);
    // The invocation id is the id of the placed result entry: stable for the call, whatever happens.
    const results = await toolResults(setup);
    expect(results).toEqual([{ id: body.invocationId, toolCallId: body.toolCallId, text: 'echo {"question":"for lookup — ünïcödé ✓"}', isError: false }]);
    // The secret is stored sealed, never in plain text.
    const stored = await runInDurableObject(env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`), (instance: SessionObject) => instance.session().getValue(toolDefinition("lookup"))?.value);
    expect(stored?.sealedSecret).toBeDefined();
    expect(JSON.stringify(stored)).not.toContain(secrets.lookup?.slice(4));
  });

  it("a webhook that verifies with another secret refuses the call; its 401 is an error result and the run goes on", async () => {
    const { setup, hook } = await httpToolLane("http_badsig", { lookup: { behaviour: "echo" } }, false);
    await hook.trust("echo", "tsk_not-the-secret-of-this-tool");
    const record = await settle(setup, await prompt(setup));
    expect(record.status).toBe("completed");
    expect((await hook.received()).map((received) => received.signatureValid)).toEqual([false]);
    expect(await resultTexts(setup)).toEqual([{ text: "The tool endpoint answered HTTP 401", isError: true }]);
  });

  it("a timeout (before or during the body), a 500, an oversized body, a body that is not JSON and one that is not a tool result each become an error result; the run completes", async () => {
    const { setup, hook } = await httpToolLane("http_failures", {
      slow: { behaviour: "slow", timeoutMs: 300 },
      stalling: { behaviour: "stall-body", timeoutMs: 300 },
      broken: { behaviour: "fail" },
      huge: { behaviour: "oversize" },
      garbled: { behaviour: "invalid" },
      odd: { behaviour: "wrong-shape" },
    });
    const record = await settle(setup, await prompt(setup));
    expect(record.status).toBe("completed");
    expect((await hook.received()).map((received) => received.behaviour).sort()).toEqual(["fail", "invalid", "oversize", "slow", "stall-body", "wrong-shape"]);
    const results = await resultTexts(setup);
    expect(results).toEqual([
      { text: "The tool endpoint did not answer within 300 ms", isError: true },
      { text: "The tool endpoint did not answer within 300 ms", isError: true },
      { text: "The tool endpoint answered HTTP 500", isError: true },
      { text: `The tool endpoint's answer is larger than ${MAX_HTTP_TOOL_RESPONSE_BYTES} bytes`, isError: true },
      { text: "The tool endpoint answered with a body that is not JSON", isError: true },
      { text: expect.stringMatching(/^The tool endpoint's answer is not a tool result: /), isError: true },
    ]);
  });
});

describe("http tools across a crash", () => {
  async function parkedCall(prefix: string, replay: "safe" | "never") {
    const { setup, hook } = await httpToolLane(prefix, { effect: { behaviour: "park-first", replay } });
    const operationId = await prompt(setup);
    for (let i = 0; i < 1000 && (await hook.received()).length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await hook.received()).toHaveLength(1);
    // The webhook holds the first call: the call is effect_pending when the object dies.
    await abortAllDurableObjects();
    return { setup, hook, operationId };
  }

  it('replay "safe": the fresh object calls the webhook again with the same Idempotency-Key, signed again; the result is placed once', async () => {
    const { setup, hook, operationId } = await parkedCall("http_safe", "safe");
    const record = await settle(setup, operationId);
    expect(record.status).toBe("completed");
    const received = await hook.received();
    expect(received).toHaveLength(2);
    expect(received.every((call) => call.signatureValid)).toBe(true);
    const [first, second] = received;
    expect(second?.idempotencyKey).toBe(first?.idempotencyKey);
    expect(second?.body).toEqual(first?.body);
    const results = await toolResults(setup);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ id: first?.idempotencyKey, text: "answered call 2", isError: false });
  });

  it('replay "never": the webhook is not called again; the result says the outcome is unknown', async () => {
    const { setup, hook, operationId } = await parkedCall("http_never", "never");
    const record = await settle(setup, operationId);
    expect(record.status).toBe("completed");
    expect(await hook.received()).toHaveLength(1);
    const results = await toolResults(setup);
    expect(results).toHaveLength(1);
    expect(results[0]?.isError).toBe(true);
    expect(results[0]?.text).toMatch(/interrupted/i);
  });
});
