import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, createTenant, readAdminToken } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { fencedBlocks, jsonValues, runShellBlocks } from "./doc-blocks.ts";

// The `sh` examples of docs/agents.md, docs/api-sessions.md, docs/api-lanes.md, docs/api-tenants.md, docs/ai-sdk.md, docs/tools.md, docs/schedules.md and docs/data.md as a user follows them: exactly as
// written, in order, in one bash per doc against one `npm start`, with `BASE` and `KEY` set as
// docs/api.md sets them (a fresh tenant per doc).

describe("the shell examples of the docs", () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer();
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
  });

  it("define, read, version and delete an agent, then run three users' sessions from one, as written", async () => {
    const { key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "agentsdoc");
    const blocks = fencedBlocks("docs/agents.md", "sh");
    expect(blocks).toHaveLength(10);
    const [created, read, patched, versions, deleted, tenantTool, agent, sessions, found, moved] = await runShellBlocks(blocks, { baseUrl: server.baseUrl, key });
    expect(jsonValues(created ?? "")[0]).toMatchObject({ id: "support", version: 1, activeTools: ["current_time", "lookup_order"], metadata: { team: "support" } });
    const [list, latest] = jsonValues(read ?? "");
    expect(list).toMatchObject({ items: [{ id: "support", version: 1 }], nextCursor: null });
    expect(latest).toMatchObject({ id: "support", version: 1 });
    const [second] = jsonValues(patched ?? "");
    expect(second).toMatchObject({
      version: 2,
      settings: { systemPrompt: "You answer support questions in two sentences.", retry: { maxRetries: 2 } },
      tools: { current_time: { kind: "builtin" } },
      activeTools: ["current_time"],
      metadata: { team: "support", tier: "gold" },
    });
    expect(second).not.toHaveProperty("tools.lookup_order");
    const [history, first] = jsonValues(versions ?? "");
    expect(history).toMatchObject({ items: [{ version: 1 }, { version: 2 }], nextCursor: null });
    expect(first).toEqual(jsonValues(created ?? "")[0]);
    expect(deleted?.split("\n")[0]).toBe("204");
    expect(jsonValues(deleted ?? "")[0]).toMatchObject({ id: "support", version: 2, deletedAt: expect.any(Number) });

    // Run sessions from an agent: the tenant tool's one secret, the agent pinning it, three users' sessions.
    expect(jsonValues(tenantTool ?? "")[0]).toMatchObject({ name: "lookup_order", revision: 1, secret: expect.stringMatching(/^tsk_/) });
    expect(jsonValues(agent ?? "")[0]).toMatchObject({ id: "shop", version: 1, tools: { lookup_order: { kind: "tenant", tool: "lookup_order", revision: 1 } } });
    const [alice, bob, carol, prompted] = jsonValues(sessions ?? "");
    for (const [session, user] of [[alice, "alice"], [bob, "bob"], [carol, "carol"]] as const) {
      expect(session).toMatchObject({ id: `shop-${user}`, agent: { id: "shop", version: 1 }, metadata: { user }, settings: { systemPrompt: "You are the shop assistant." }, lanes: [{ name: "main" }] });
      expect(session).not.toHaveProperty("toolSecrets");
    }
    expect(prompted).toMatchObject({ status: "completed", agent: { id: "shop", version: 1 } });
    const [byUser, byAgent] = jsonValues(found ?? "");
    expect(byUser).toMatchObject({ items: [{ id: "shop-alice", agent: { id: "shop", version: 1 } }], nextCursor: null });
    expect(byAgent).toMatchObject({ items: [{ id: "shop-alice" }, { id: "shop-bob" }, { id: "shop-carol" }], nextCursor: null });
    const [upgraded, movedSession, onTwo] = jsonValues(moved ?? "");
    expect(upgraded).toMatchObject({ id: "shop", version: 2 });
    expect(movedSession).toMatchObject({ id: "shop-alice", agent: { id: "shop", version: 2 }, settings: { systemPrompt: "You are the shop assistant. Answer in one sentence." } });
    expect(onTwo).toMatchObject({ items: [{ id: "shop-alice", agent: { id: "shop", version: 2 } }], nextCursor: null });
  }, 90_000);

  it("a prompt sent while the lane may still be busy waits its turn and answers with its own run (docs/api-lanes.md)", async () => {
    const { key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "busydoc");
    const blocks = fencedBlocks("docs/api-lanes.md", "sh");
    expect(blocks).toHaveLength(1);
    const [output] = await runShellBlocks(blocks, { baseUrl: server.baseUrl, key });
    const [session, lane, first, second] = jsonValues(output ?? "");
    expect(session).toMatchObject({ id: "busy-demo" });
    expect(lane).toMatchObject({ name: "main" });
    expect(first).toMatchObject({ operationId: expect.any(String), kind: "run" });
    expect(second).toMatchObject({ kind: "run", status: "completed", messages: expect.arrayContaining([expect.objectContaining({ role: "assistant", content: [{ type: "text", text: "And one more thing" }] })]) });
  }, 90_000);

  it("mint a browser token, chat through the AI SDK route with it, read the page's messages (docs/ai-sdk.md)", async () => {
    const { key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "aisdkdoc");
    const blocks = fencedBlocks("docs/ai-sdk.md", "sh");
    expect(blocks).toHaveLength(2);
    const [setup, chat] = await runShellBlocks(blocks, { baseUrl: server.baseUrl, key });
    const [session, lane] = jsonValues(setup ?? "");
    expect(session).toMatchObject({ id: "chat-demo" });
    expect(lane).toMatchObject({ name: "main" });
    expect(setup).toMatch(/\nTOKEN=bt_[A-Za-z0-9._~-]{20,}$/m);
    const lines = (chat ?? "").split("\n");
    const chunks = lines.filter((line) => line.startsWith("data: {")).map((line) => JSON.parse(line.slice("data: ".length)));
    expect(chunks[0]).toMatchObject({ type: "start", messageId: expect.any(String) });
    expect(chunks.filter((chunk) => chunk.type === "text-delta").map((chunk) => chunk.delta).join("")).toBe("Hello there");
    expect(chunks.at(-1)).toEqual({ type: "finish", finishReason: "stop" });
    expect(lines).toContain("data: [DONE]");
    const messages = JSON.parse(lines.filter((line) => line.startsWith("[")).at(-1) ?? "null");
    expect(messages).toMatchObject([
      { role: "user", parts: [{ type: "text", text: "Hello there" }] },
      { id: chunks[0].messageId, role: "assistant", parts: [{ type: "step-start" }, { type: "text", text: "Hello there", state: "done" }] },
    ]);
  }, 90_000);

  it("mint a browser token and use it as a page would: prompt, snapshot by ?access_token=, refused elsewhere (docs/api-tenants.md)", async () => {
    const { key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "tokensdoc");
    const blocks = fencedBlocks("docs/api-tenants.md", "sh");
    expect(blocks).toHaveLength(1);
    const [output] = await runShellBlocks(blocks, { baseUrl: server.baseUrl, key });
    const [session, lane, answer, snapshot, refused] = jsonValues(output ?? "");
    expect(session).toMatchObject({ id: "browser-demo" });
    expect(lane).toMatchObject({ name: "main" });
    expect(answer).toMatchObject({ status: "completed", messages: [{ role: "user" }, { role: "assistant" }] });
    expect(snapshot).toMatchObject({ snapshot: { lane: "main" } });
    expect(refused).toMatchObject({ error: { code: "TokenScope" } });
  }, 90_000);

  it("activate a builtin tool and watch a run call it; define an http tool at creation and by PUT (docs/tools.md)", async () => {
    const api = new Api(server.baseUrl, readAdminToken());
    const { key } = await createTenant(api, "toolsdoc");
    const tenant = new Api(server.baseUrl, key);
    await tenant.expect(201, "POST", "/v1/sessions", { body: { id: "tools-doc" } });
    await tenant.expect(201, "PUT", "/v1/sessions/tools-doc/lanes/main", { body: {} });
    const blocks = fencedBlocks("docs/tools.md", "sh");
    expect(blocks).toHaveLength(6);
    // The first four; the last two (a run waiting on a client tool, an MCP server) run in doc-examples-more.e2e.test.ts.
    const [activated, ran, created, put] = await runShellBlocks(blocks.slice(0, 4), { baseUrl: server.baseUrl, key, vars: { SID: "tools-doc" } });
    const [tool, lane] = jsonValues(activated ?? "");
    expect(tool).toMatchObject({ name: "current_time", kind: "builtin" });
    expect(lane).toMatchObject({ activeToolNames: ["current_time"] });
    const answer = jsonValues(ran ?? "").at(-1);
    expect(answer).toMatchObject({ status: "completed", messages: expect.arrayContaining([expect.objectContaining({ role: "toolResult", toolName: "current_time", isError: false })]) });
    expect(jsonValues(created ?? "")[0]).toMatchObject({ id: expect.any(String), toolSecrets: { lookup: expect.any(String) } });
    expect(jsonValues(put ?? "")[0]).toMatchObject({ name: "lookup", kind: "http", secret: expect.any(String) });
  }, 90_000);

  it("create a session with metadata, merge a patch into it, find it by metadata", async () => {
    const { key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "sessionsdoc");
    const blocks = fencedBlocks("docs/api-sessions.md", "sh");
    expect(blocks).toHaveLength(1);
    const [output] = await runShellBlocks(blocks, { baseUrl: server.baseUrl, key });
    const [created, patched, found] = jsonValues(output ?? "");
    expect(created).toMatchObject({ id: "chat-u42", name: "Support chat", metadata: { user: "u_42", plan: "pro" } });
    expect(patched).toMatchObject({ id: "chat-u42", metadata: { user: "u_42", plan: "enterprise", ticket: "T-7" } });
    expect(found).toEqual({ items: [{ id: "chat-u42", name: "Support chat", createdAt: expect.any(Number), metadata: { user: "u_42", plan: "enterprise", ticket: "T-7" } }], nextCursor: null });
  }, 90_000);

  it("schedule a weekday report and a one-off that runs at once, read its run, pause, list and delete (docs/schedules.md)", async () => {
    const { key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "schedulesdoc");
    const blocks = fencedBlocks("docs/schedules.md", "sh");
    expect(blocks).toHaveLength(4);
    const [, created, runs, managed] = await runShellBlocks(blocks, { baseUrl: server.baseUrl, key });
    const [standup, reminder] = jsonValues(created ?? "");
    expect(standup).toMatchObject({ id: "standup", cron: "0 9 * * 1-5", timezone: "Europe/Berlin", paused: false, nextRunAt: expect.any(Number) });
    expect(reminder).toMatchObject({ id: "reminder", at: expect.any(Number) });
    expect(jsonValues(runs ?? "")).toEqual([{ items: [expect.objectContaining({ operationId: expect.any(String) })], nextCursor: null }]);
    const lines = (managed ?? "").split("\n");
    const [paused, listed] = jsonValues(lines.slice(0, -1).join("\n"));
    expect(paused).toMatchObject({ id: "standup", paused: true, nextRunAt: null });
    expect(listed).toMatchObject({ items: expect.any(Array) });
    expect(lines.at(-1)).toBe("204");
  }, 90_000);

  it("delete one end user's sessions, delete a tenant and follow it to 404, set a retention (docs/data.md, Deleting data)", async () => {
    const { tenantId, key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "deletiondoc");
    const blocks = fencedBlocks("docs/data.md", "sh").slice(3);
    expect(blocks).toHaveLength(3);
    const [byUser, tenant, retention] = await runShellBlocks(blocks, { baseUrl: server.baseUrl, key });
    const [matched, emptied, others] = jsonValues(byUser ?? "");
    expect(matched).toEqual({ matched: 2 });
    expect(emptied).toEqual({ items: [], nextCursor: null });
    expect(others).toMatchObject({ items: [{ metadata: { user: "u_2" } }], nextCursor: null });
    const [created, deleting, reserved] = jsonValues(tenant ?? "");
    expect(created).toMatchObject({ id: "closing-shop" });
    expect(deleting).toMatchObject({ id: "closing-shop", status: "deleting", deletion: { sessionsTotal: 0 } });
    expect(reserved).toMatchObject({ error: { code: "TenantExists" } });
    expect(jsonValues(retention ?? "")).toEqual([expect.objectContaining({ sessionRetentionDays: 90 })]);
    const admin = new Api(server.baseUrl, readAdminToken());
    expect(await admin.expect(200, "GET", `/v1/admin/tenants/${tenantId}/quotas`)).toMatchObject({ sessionRetentionDays: 90 });
  }, 90_000);

  it("export a session, import it in one request and in parts (docs/data.md)", async () => {
    const { key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "datadoc");
    // docs/data.md: three blocks of export and import, then three of deletion (the test above).
    const blocks = fencedBlocks("docs/data.md", "sh").slice(0, 3);
    expect(fencedBlocks("docs/data.md", "sh")).toHaveLength(6);
    const [exported, imported, parts] = await runShellBlocks(blocks, { baseUrl: server.baseUrl, key });
    const [created, colour, ...lines] = jsonValues(exported ?? "");
    expect(created).toMatchObject({ id: "notes", name: "Notes" });
    expect(colour).toMatchObject({ seq: expect.any(Number) });
    expect(lines).toEqual([
      expect.objectContaining({ type: "session", format: "pi-session", version: 1, id: "notes", name: "Notes", metadata: { user: "u_42" } }),
      { type: "value", namespace: "app", key: "colour", value: "blue" },
      { type: "end", entries: 0, values: 1, items: 0, labels: 0, results: 0 },
    ]);
    expect(jsonValues(imported ?? "")).toEqual([expect.objectContaining({ id: "notes-copy", name: "Notes", metadata: { user: "u_42" } })]);
    const [first, second, committed] = jsonValues(parts ?? "");
    expect([first, second]).toEqual([{ part: 1, lines: 2, repeated: false }, { part: 2, lines: 1, repeated: false }]);
    expect(committed).toMatchObject({ id: "notes-parts", name: "Notes" });
  }, 90_000);
});

