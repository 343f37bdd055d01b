import { describe, expect, it } from "vitest";
import type { TenantToolView } from "../../schema/tenant-tools.ts";
import { call, errorCode, newTenant, json } from "./helpers.ts";
import { CLIENT_TOOL, copiedSecret, copiesFor, createAgent, HTTP_TOOL, patchAgent, putTool } from "./tenant-tool-helpers.ts";

// Tenant tools (docs/tools.md "Tenant tools") through the real Hono app: revisions, the secret shown
// once and kept, deletion refused while an agent's latest version names the tool, the copies a
// session bound to an agent gets, isolation between tenants. Bounds are in tenant-tools-bounds.test.ts.

type Reply = TenantToolView & { secret?: string };

describe("tenant tools", () => {
  it("creates, revises, lists, reads and deletes a tool; the secret is answered once and kept by every revision", async () => {
    const { key } = await newTenant("ttools");
    const first = await json<Reply>(await putTool(key, "lookup", HTTP_TOOL), 201);
    expect(first).toEqual({ name: "lookup", ...HTTP_TOOL, replay: "never", secretHint: expect.stringMatching(/^….{4}$/), secret: expect.stringMatching(/^tsk_/), revision: 1, createdAt: expect.any(Number), updatedAt: first.createdAt });
    const { secret, ...shown } = first;
    expect(await json(await call("/v1/tools/lookup", { token: key }), 200)).toEqual(shown);

    const second = await json<Reply>(await putTool(key, "lookup", { ...HTTP_TOOL, description: "Looks up an order by id", timeoutMs: 5000 }), 200);
    expect(second).toEqual({ ...shown, description: "Looks up an order by id", timeoutMs: 5000, revision: 2, updatedAt: expect.any(Number) });
    expect(second).not.toHaveProperty("secret");
    expect(second.secretHint).toBe(first.secretHint);

    await json(await putTool(key, "ask", CLIENT_TOOL), 201);
    const listed = await json<{ items: TenantToolView[]; nextCursor: string | null }>(await call("/v1/tools", { token: key }), 200);
    expect(listed.items.map((tool) => [tool.name, tool.revision])).toEqual([["lookup", 2], ["ask", 1]]);
    expect(JSON.stringify(listed)).not.toContain(secret ?? "no secret");
    const paged = await json<{ items: TenantToolView[]; nextCursor: string | null }>(await call("/v1/tools?limit=1", { token: key }), 200);
    expect(paged.items.map((tool) => tool.name)).toEqual(["lookup"]);
    const rest = await json<{ items: TenantToolView[]; nextCursor: string | null }>(await call(`/v1/tools?limit=1&cursor=${paged.nextCursor}`, { token: key }), 200);
    expect(rest).toEqual({ items: [listed.items[1]], nextCursor: null });

    expect((await call("/v1/tools/ask", { method: "DELETE", token: key })).status).toBe(204);
    expect(await errorCode(await call("/v1/tools/ask", { token: key }))).toBe("ToolNotFound");
    expect(await errorCode(await call("/v1/tools/ask", { method: "DELETE", token: key }))).toBe("ToolNotFound");
  });

  it("an agent pins the current revision; every session's copy holds the one secret, sealed for that session only", async () => {
    const { key, tenantId } = await newTenant("ttpin");
    const { secret } = await json<Reply>(await putTool(key, "lookup", HTTP_TOOL), 201);
    const v1 = await createAgent(key, { id: "support", tools: { orders: { kind: "tenant", tool: "lookup" }, current_time: { kind: "builtin" } }, activeTools: ["orders", "current_time"] });
    expect(v1.tools).toEqual({ orders: { kind: "tenant", tool: "lookup", revision: 1 }, current_time: { kind: "builtin" } });

    await json(await putTool(key, "lookup", { ...HTTP_TOOL, description: "Revision two" }), 200);
    // A version made afterwards pins revision 2; version 1 keeps revision 1.
    const v2 = await patchAgent(key, "support", { metadata: { stage: "two" } });
    expect(v2.tools).toEqual({ orders: { kind: "tenant", tool: "lookup", revision: 2 }, current_time: { kind: "builtin" } });
    expect((await json<{ tools: unknown }>(await call("/v1/agents/support/versions/1", { token: key }), 200)).tools).toEqual(v1.tools);

    const one = await copiesFor(tenantId, "support", 1, "s_one");
    expect(one.agent.version).toBe(1);
    expect(one.copies.tools.orders).toMatchObject({ kind: "http", description: HTTP_TOOL.description, url: HTTP_TOOL.url, tenantTool: { name: "lookup", revision: 1 }, fromAgent: true });
    expect(Object.keys(one.copies.tools)).toEqual(["orders"]);
    const two = await copiesFor(tenantId, "support", undefined, "s_two");
    expect(two.copies.tools.orders).toMatchObject({ description: "Revision two", tenantTool: { name: "lookup", revision: 2 } });
    // Both revisions, both sessions: the secret the creating PUT answered, opened under each session's own context.
    expect(await copiedSecret(one.copies, "s_one", "orders")).toBe(secret);
    expect(await copiedSecret(two.copies, "s_two", "orders")).toBe(secret);
    // A seal for one session does not open as another's.
    await expect(copiedSecret(one.copies, "s_two", "orders")).rejects.toThrow();
    expect(one.copies.tools.orders?.sealedSecret).not.toBe(two.copies.tools.orders?.sealedSecret);
  });

  it("DELETE is 409 ToolInUse while the latest version of a live agent names the tool, 204 once none does", async () => {
    const { key } = await newTenant("ttuse");
    await json(await putTool(key, "lookup", HTTP_TOOL), 201);
    await createAgent(key, { id: "a", tools: { lookup: { kind: "tenant", tool: "lookup" } } });
    await createAgent(key, { id: "b", tools: { orders: { kind: "tenant", tool: "lookup" } } });
    const refused = await call("/v1/tools/lookup", { method: "DELETE", token: key });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ error: { code: "ToolInUse", details: { agents: ["a", "b"] } } });

    // a's latest version no longer names it (its version 1 still does: that is no use); b is deleted.
    await patchAgent(key, "a", { tools: { lookup: null } });
    expect((await call("/v1/agents/b", { method: "DELETE", token: key })).status).toBe(204);
    expect((await call("/v1/tools/lookup", { method: "DELETE", token: key })).status).toBe(204);
    expect(await json(await call("/v1/tools", { token: key }), 200)).toEqual({ items: [], nextCursor: null });
  });

  it("a PUT after DELETE creates the tool afresh: 201, a new secret, revision numbers continuing; old pins still copy", async () => {
    const { key, tenantId } = await newTenant("ttagain");
    const first = await json<Reply>(await putTool(key, "lookup", HTTP_TOOL), 201);
    await createAgent(key, { id: "old", tools: { lookup: { kind: "tenant", tool: "lookup" } } });
    await patchAgent(key, "old", { tools: { lookup: null } });
    expect((await call("/v1/tools/lookup", { method: "DELETE", token: key })).status).toBe(204);

    const again = await json<Reply>(await putTool(key, "lookup", HTTP_TOOL), 201);
    expect(again).toMatchObject({ revision: 2, secret: expect.stringMatching(/^tsk_/) });
    expect(again.secret).not.toBe(first.secret);
    // The agent's version 1 pinned revision 1 of the deleted tool: its copy still opens to the first secret.
    const old = await copiesFor(tenantId, "old", 1, "s_old");
    expect(await copiedSecret(old.copies, "s_old", "lookup")).toBe(first.secret);
  });

  it("a client tool turned into an http tool gets a secret then; an http tool turned into a client tool keeps none", async () => {
    const { key } = await newTenant("ttkind");
    expect(await json(await putTool(key, "t", CLIENT_TOOL), 201)).not.toHaveProperty("secret");
    const http = await json<Reply>(await putTool(key, "t", HTTP_TOOL), 200);
    expect(http).toMatchObject({ kind: "http", revision: 2, secret: expect.stringMatching(/^tsk_/) });
    const client = await json<Reply>(await putTool(key, "t", CLIENT_TOOL), 200);
    expect(client).not.toHaveProperty("secret");
    expect(client).not.toHaveProperty("secretHint");
  });

  it("refuses a builtin, a bad body and a URL the egress policy refuses, with nothing written", async () => {
    const { key } = await newTenant("ttbad");
    const builtin = await putTool(key, "current_time", { kind: "builtin" });
    expect(builtin.status).toBe(400);
    expect(await builtin.json()).toMatchObject({ error: { code: "ValidationFailed", message: expect.stringContaining('an agent names a builtin tool directly') } });
    expect(await errorCode(await putTool(key, "t", { ...HTTP_TOOL, parameters: { type: "object", properties: { a: { type: "nonsense" } } } }))).toBe("ValidationFailed");
    const internal = await putTool(key, "t", { ...HTTP_TOOL, url: "https://169.254.169.254/latest" });
    expect(internal.status).toBe(400);
    expect(await internal.json()).toMatchObject({ error: { code: "ValidationFailed", details: { field: "url", reason: "unsafe_address" } } });
    expect(await errorCode(await putTool(key, "bad name!", CLIENT_TOOL))).toBe("ValidationFailed");
    expect(await json(await call("/v1/tools", { token: key }), 200)).toEqual({ items: [], nextCursor: null });
  });

  it("an agent naming a tenant tool that does not exist is refused, nothing written", async () => {
    const { key } = await newTenant("ttmissing");
    const response = await call("/v1/agents", { body: { id: "a", tools: { x: { kind: "tenant", tool: "nope" } } }, token: key });
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ error: { code: "UnknownTool", details: { tools: ["nope"] } } });
    expect(await errorCode(await call("/v1/agents/a", { token: key }))).toBe("AgentNotFound");
  });

  it("another tenant sees none of them: 404 on every route, an empty list, its own tool of the same name", async () => {
    const owner = await newTenant("ttown");
    const other = await newTenant("ttother");
    const { secret } = await json<Reply>(await putTool(owner.key, "lookup", HTTP_TOOL), 201);
    expect(await json(await call("/v1/tools", { token: other.key }), 200)).toEqual({ items: [], nextCursor: null });
    expect(await errorCode(await call("/v1/tools/lookup", { token: other.key }))).toBe("ToolNotFound");
    expect(await errorCode(await call("/v1/tools/lookup", { method: "DELETE", token: other.key }))).toBe("ToolNotFound");
    const response = await call("/v1/agents", { body: { tools: { lookup: { kind: "tenant", tool: "lookup" } } }, token: other.key });
    expect(await errorCode(response)).toBe("UnknownTool");
    const own = await json<Reply>(await putTool(other.key, "lookup", HTTP_TOOL), 201);
    expect(own.secret).not.toBe(secret);
    expect((await call("/v1/tools/lookup", { token: owner.key })).status).toBe(200);
  });
});
