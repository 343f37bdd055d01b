import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { toolDefinition } from "../../tools/definitions.ts";
import { mcpServer } from "../../tools/mcp-definitions.ts";
import { call } from "./helpers.ts";
import { expectTripwireUntouched, fixturesUrl, tripwirePort } from "./egress-helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { mcpScope, placedResults, registerMcpServer } from "./mcp-helpers.ts";
import { activate, ARGS_SCHEMA, prompt, putTool, resultTexts, settle, webhook } from "./tool-api-helpers.ts";
import { deliveries, eventually, receiver, register, settledPrompt } from "./webhooks-helpers.ts";

// Issue 30 items 7 and 8 at call time, over REST: a URL stored before the policy (written straight
// into storage here) is refused before every request, and no connection reaches the tripwire, a
// loopback listener that counts connections (test/node/egress-fixtures.ts). The pool runs with
// LOCAL_DEV on, so the stored URLs are the forms that stay refused there: https to loopback and
// the unspecified address. A provider that answers with a redirect is not followed.

/** Stored URLs in several literal forms, each pointing at the tripwire, with the rule that refuses it. */
const STORED = (): [string, string][] => {
  const port = tripwirePort();
  return [
    [`https://127.0.0.1:${port}/hook`, "a loopback address: 127.0.0.1 (127.0.0.0/8)"],
    [`https://2130706433:${port}/hook`, "a loopback address: 127.0.0.1 (127.0.0.0/8)"],
    [`https://[::ffff:127.0.0.1]:${port}/hook`, "a loopback address: [::ffff:7f00:1] (127.0.0.0/8 inside ::ffff:0:0/96)"],
    [`https://localhost:${port}/hook`, "a loopback address: localhost (localhost)"],
    [`http://0.0.0.0:${port}/hook`, "an unspecified address: 0.0.0.0 (0.0.0.0/8)"],
  ];
};

const LOCAL_HINT = "; in local development only plain http may reach loopback";
const refusal = (subject: string, field: string, words: string): string => `${subject} was not contacted: ${field} may not point at ${words}${words.includes("loopback") ? LOCAL_HINT : ""}`;

describe("a URL stored earlier is refused at call time", () => {
  it("http tools: each call is an error result saying the endpoint was not contacted; nothing reaches the tripwire", async () => {
    const setup = await laneSetup("egcall_http");
    const hook = webhook("egcall_http");
    const stored = STORED();
    const names = stored.map((_, index) => `t${index}`);
    for (const [index, name] of names.entries()) {
      expect((await putTool(setup, name, { kind: "http", description: "d", parameters: ARGS_SCHEMA, url: hook.hookUrl("echo") })).status).toBe(201);
      const url = stored[index]?.[0];
      await runInDurableObject(env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`), async (object: SessionObject) => {
        const session = object.session();
        const definition = session.getValue(toolDefinition(name))?.value;
        if (!definition || url === undefined) throw new Error("no stored definition");
        await session.setValue(toolDefinition(name), { ...definition, url });
      });
    }
    await useScript(setup, [{ toolCalls: names.map((name) => ({ name, arguments: { question: "q" } })) }, { text: "carried on" }]);
    await activate(setup, names);
    expect((await settle(setup, await prompt(setup))).status).toBe("completed");
    expect(await resultTexts(setup)).toEqual(stored.map(([, words]) => ({ text: refusal("The tool endpoint", "url", words), isError: true })));
    expect(await hook.received()).toEqual([]);
    await expectTripwireUntouched();
  });

  it("MCP servers: discovery and calls say the server was not contacted; nothing reaches the tripwire", async () => {
    const setup = await laneSetup("egcall_mcp");
    const scope = mcpScope("egcall_mcp");
    await registerMcpServer(setup, "srv", { url: scope.url, prefix: "" });
    const [url, words] = STORED()[0] ?? [];
    await runInDurableObject(env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`), async (object: SessionObject) => {
      const session = object.session();
      const server = session.getValue(mcpServer("srv"))?.value;
      if (!server || url === undefined) throw new Error("no stored server");
      await session.setValue(mcpServer("srv"), { ...server, url });
    });
    const expected = refusal("The MCP server srv", "url", words ?? "");
    const refreshed = await call(`${setup.sessionPath}/mcp-servers/srv/refresh`, { method: "POST", token: setup.key });
    expect(await refreshed.json()).toMatchObject({ status: "error", lastError: { message: expected } });
    await useScript(setup, [{ toolCalls: [{ name: "echo", arguments: { text: "hello" } }] }, { text: "carried on" }]);
    await activate(setup, ["echo"]);
    expect((await settle(setup, await prompt(setup))).status).toBe("completed");
    expect(await placedResults(setup)).toEqual([{ toolName: "echo", content: [{ type: "text", text: expected }], isError: true }]);
    expect(await scope.calls()).toEqual([]);
    await expectTripwireUntouched();
  });

  it("webhooks: the delivery is blocked, its log says why; nothing reaches the tripwire", async () => {
    const setup = await laneSetup("egcall_hook");
    const hook = receiver("egcall_hook");
    const endpoint = await register(setup.key, hook.url("ok"));
    const [url, words] = STORED()[0] ?? [];
    await runInDurableObject(env.TENANTS.getByName(setup.tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE webhook_endpoints SET url = ? WHERE endpoint_id = ?", url, endpoint.id);
    });
    await settledPrompt(setup.key, setup.lanePath, "tell nobody");
    const [attempted] = await eventually(async () => {
      const items = await deliveries(setup.key, endpoint.id);
      return items[0]?.attempts === 1 ? items : undefined;
    }, "the first attempt");
    expect(attempted?.lastError).toBe(`blocked: ${refusal("the endpoint", "url", words ?? "")}`);
    expect(await hook.received()).toEqual([]);
    await expectTripwireUntouched();
  });

  it("provider base URLs: the run fails provider_error saying the provider was not contacted; nothing reaches the tripwire", async () => {
    const setup = await laneSetup("egcall_prov");
    const put = await call("/v1/providers/openai", { method: "PUT", body: { apiKey: "sk-egress-call-time-0001", baseUrl: "https://proxy.example.com/v1" }, token: setup.key });
    expect(put.status).toBe(200);
    const baseUrl = `https://127.0.0.1:${tripwirePort()}/v1`;
    await runInDurableObject(env.TENANTS.getByName(setup.tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE provider_keys SET base_url = ? WHERE provider = 'openai'", baseUrl);
    });
    expect((await call(`${setup.lanePath}/config`, { method: "PATCH", body: { model: { provider: "openai", modelId: "gpt-5-mini" } }, token: setup.key })).status).toBe(200);
    const record = await settle(setup, await prompt(setup));
    expect(record).toMatchObject({ status: "failed", error: { code: "provider_error", message: refusal("Provider openai", "baseUrl", "a loopback address: 127.0.0.1 (127.0.0.0/8)") } });
    await expectTripwireUntouched();
  });
});

describe("provider requests never follow redirects (item 8)", () => {
  it("a base URL answering 307 to a metadata path: the run fails provider_error saying so; the redirect target gets nothing", async () => {
    const setup = await laneSetup("egredirect");
    const put = await call("/v1/providers/openai", { method: "PUT", body: { apiKey: "sk-egress-redirect-0001", baseUrl: `${fixturesUrl()}/redirect/v1` }, token: setup.key });
    expect(put.status).toBe(200);
    expect((await call(`${setup.lanePath}/config`, { method: "PATCH", body: { model: { provider: "openai", modelId: "gpt-5-mini" } }, token: setup.key })).status).toBe(200);
    const record = await settle(setup, await prompt(setup));
    expect(record).toMatchObject({
      status: "failed",
      error: { code: "provider_error", message: "Provider openai answered with a redirect (HTTP 307), which provider requests never follow; set the provider's final address as its baseUrl" },
    });
    await expectTripwireUntouched();
  });
});
