import { runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient, isApiError } from "../../client/index.ts";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import { newTenant } from "../api/helpers.ts";
import { objectOf } from "../api/session-helpers.ts";

// The SDK's tools and providers against the real app in workerd: definitions, a client tool answered
// through `tools.submitResult`, and the tenant's own provider keys.

const ARGS = { type: "object", properties: { question: { type: "string" } }, required: ["question"] };

describe("client SDK: tools and providers", { timeout: 30_000 }, () => {
  it("defines tools, answers a client tool call from the SDK, and manages provider keys", async () => {
    const tenant = await newTenant("sdk_tools");
    const client = createClient({ baseUrl: "http://api.test/", key: tenant.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const session = await client.sessions.create();
    const http = await client.tools.put(session.id, "lookup", { kind: "http", description: "Looks up", parameters: ARGS, url: "https://tools.example.com/lookup" });
    expect(http).toMatchObject({ created: true, name: "lookup", kind: "http" });
    expect(http.secret).toMatch(/^tsk_/);
    expect((await client.tools.put(session.id, "lookup", { kind: "http", description: "Looks up, v2", parameters: ARGS, url: "https://tools.example.com/v2" })).created).toBe(false);
    await client.tools.put(session.id, "ask_user", { kind: "client", description: "Asks the user", parameters: ARGS });
    expect((await client.tools.list(session.id)).map((tool) => tool.name).sort()).toEqual(["ask_user", "lookup"]);
    await client.tools.delete(session.id, "lookup");
    expect(isApiError(await client.tools.delete(session.id, "lookup").catch((error: unknown) => error), "ToolNotFound")).toBe(true);

    await client.lanes.put(session.id, "main", { model: { provider: "scripted", modelId: "script" }, activeTools: ["ask_user"] });
    await runInDurableObject(objectOf(tenant.tenantId, session.id), (instance: SessionObject) =>
      appendScriptSteps(instance.session(), [{ toolCalls: [{ name: "ask_user", arguments: { question: "ok?" } }] }, { text: "thanks" }]),
    );
    const admission = await client.operations.accept(session.id, "main", { kind: "prompt", prompt: "go" });
    let toolCallId: string | undefined;
    for (let i = 0; i < 400 && toolCallId === undefined; i++) {
      toolCallId = (await client.lanes.snapshot(session.id, "main")).snapshot.operation?.runningTools[0]?.toolCallId;
      if (toolCallId === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    if (toolCallId === undefined) throw new Error("the client call never showed up");
    await client.tools.submitResult(session.id, "main", admission.operationId, toolCallId, { content: [{ type: "text", text: "yes" }] });
    const settled = await client.operations.get(session.id, "main", admission.operationId, { wait: 10 });
    expect(settled).toMatchObject({ state: "settled", result: { status: "completed" } });
    const again = await client.tools.submitResult(session.id, "main", admission.operationId, toolCallId, { content: [{ type: "text", text: "twice" }] }).catch((error: unknown) => error);
    expect(isApiError(again)).toBe(true);

    const put = await client.providers.put("openai", { apiKey: "sk-tenant-key-abcdef123456" });
    expect(put).toMatchObject({ provider: "openai", source: "tenant", keyHint: "…3456" });
    expect(JSON.stringify(await client.providers.list())).not.toContain("sk-tenant");
    await client.providers.delete("openai");
    expect((await client.providers.list()).filter((row) => row.source === "tenant")).toEqual([]);
  });
});
