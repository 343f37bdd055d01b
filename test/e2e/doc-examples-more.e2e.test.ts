import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type ServerResponse } from "node:http";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { listenOnLoopback, readBody, type LoopbackServer } from "../node/loopback-server.ts";
import { startWebhookReceiver, type ReceivedDelivery, type WebhookReceiver } from "../node/webhook-receiver-setup.ts";
import { Api, createTenant, pollUntil, readAdminToken, settled } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { fencedBlocks, importDocModule, jsonValues, runShellBlocks, startShellBlock, type RunningBlock } from "./doc-blocks.ts";
import { startProviderFixture } from "./provider-fixture-server.ts";

// More of the docs' examples as a user follows them, exactly as written, against one `npm start`
// (a fresh tenant per doc): docs/webhooks.md, the client tool and MCP blocks of docs/tools.md, the
// SSE examples of docs/api-watch.md, docs/providers.md, the TypeScript examples of client/README.md,
// and the blocks that start `npm start` itself (README.md, docs/inspector.md). What a reader sets
// by hand (WEBHOOK_ID, SID, MCP_URL, …) is passed as the variables the docs name; what they reach
// (a webhook receiver, an MCP server, a model server) is a fixture on 127.0.0.1.
//
// Not run, because they need what a test machine does not have:
// - README.md block 1 (`npm ci`, `npm test`): it reinstalls this checkout's packages from the
//   registry and runs the whole suite, this file included;
// - README.md block 3 ("Models") and docs/providers.md block 1 ("Your own key"): a real OpenAI key,
//   and api.openai.com on the public internet (the key is put without a `baseUrl`);
// - README.md block 4 ("Deploying"): a Cloudflare account (`wrangler secret put`, `wrangler deploy`).

const run = promisify(execFile);
const repo = fileURLToPath(new URL("../../", import.meta.url));

describe("more of the docs' examples, as written", () => {
  let server: DevServer;
  const running: RunningBlock[] = [];
  const closers: (() => Promise<void>)[] = [];
  let scratch: string;
  beforeAll(async () => {
    server = await startDevServer();
    scratch = mkdtempSync(join(tmpdir(), "das-docs-more-"));
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    for (const block of running) await block.stop();
    for (const close of closers) await close();
    await server?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("registers an endpoint and re-enables a disabled one; the next settlement reaches a local receiver, signed as the doc says (docs/webhooks.md)", async () => {
    const receiver: WebhookReceiver = await startWebhookReceiver();
    closers.push(() => receiver.close());
    const verify = await documentedVerifier();
    const { key, api } = await createTenant(new Api(server.baseUrl, readAdminToken()), "webhooksdoc");
    // The reader's own endpoint, a receiver on this machine (as the doc says to try it locally),
    // disabled: a prompt settles while it is.
    const local = await api.expect<{ id: string; secret: string }>(201, "POST", "/v1/webhooks", { body: { url: `${receiver.url}/receive/docs/ok`, events: ["operation.settled"] } });
    await api.expect(200, "PATCH", `/v1/webhooks/${local.id}`, { body: { enabled: false } });
    await api.expect(201, "POST", "/v1/sessions", { body: { id: "hooks-doc" } });
    await api.expect(201, "PUT", "/v1/sessions/hooks-doc/lanes/main", { body: {} });
    await prompt(api, "hooks-doc", "Nobody hears of this one");

    const blocks = fencedBlocks("docs/webhooks.md", "sh");
    expect(blocks).toHaveLength(2);
    const [registered, reenabled] = await runShellBlocks(blocks, { baseUrl: server.baseUrl, key, vars: { WEBHOOK_ID: local.id } });
    const [example] = jsonValues(registered ?? "");
    expect(example).toEqual({ id: expect.stringMatching(/^wh_/), url: "https://example.com/hooks/agent", events: ["operation.settled"], createdAt: expect.any(Number), status: "enabled", secret: expect.stringMatching(/^whsec_/) });
    expect(jsonValues(reenabled ?? "")).toEqual([{ id: local.id, url: `${receiver.url}/receive/docs/ok`, events: ["operation.settled"], createdAt: expect.any(Number), status: "enabled" }]);
    // example.com is not reachable from here: the endpoint goes before it is sent anything.
    await api.expect(204, "DELETE", `/v1/webhooks/${String(member(example, "id"))}`);

    const heard = await prompt(api, "hooks-doc", "Tell my webhook");
    const [delivery, ...more] = await pollUntil(
      "the receiver to get the delivery",
      async (): Promise<ReceivedDelivery[]> => (await fetch(`${receiver.url}/requests/docs`)).json(),
      (received) => received.length >= 1,
      30_000,
    );
    expect(more).toEqual([]);
    if (!delivery) throw new Error("no delivery");
    const headers = { "webhook-timestamp": delivery.timestamp ?? undefined, "webhook-signature": delivery.signature ?? undefined };
    expect(verify(local.secret, headers, delivery.rawBody)).toBe(true);
    expect(verify(String(member(example, "secret")), headers, delivery.rawBody)).toBe(false);
    expect(JSON.parse(delivery.rawBody)).toEqual({
      id: delivery.webhookId,
      type: "operation.settled",
      createdAt: expect.any(Number),
      data: { sessionId: "hooks-doc", lane: "main", operationId: heard, kind: "run", status: "completed" },
    });
    // The settlement of the disabled time was never queued: the log holds the one delivery.
    const log = await pollUntil(
      "the delivery to be logged",
      () => api.expect<{ items: { eventId: string; status: string }[] }>(200, "GET", `/v1/webhooks/${local.id}/deliveries`),
      (page) => page.items[0]?.status === "delivered",
    );
    expect(log.items).toEqual([expect.objectContaining({ eventId: delivery.webhookId, status: "delivered", attempts: 1 })]);
  }, 90_000);

  it("answers a waiting client tool call, and registers an MCP server and activates its tool (docs/tools.md blocks 5 and 6)", async () => {
    const { key, api } = await createTenant(new Api(server.baseUrl, readAdminToken()), "toolsmoredoc");
    const sid = "tools-more";
    await api.expect(201, "POST", "/v1/sessions", { body: { id: sid, tools: { approve: { kind: "client", description: "Asks a person to approve", parameters: { type: "object", properties: {} } } } } });
    await api.expect(201, "PUT", `/v1/sessions/${sid}/lanes/main`, { body: { model: { provider: "scripted", modelId: "script" }, activeTools: ["approve"] } });
    for (const step of [{ toolCalls: [{ name: "approve", arguments: {} }] }, { text: "It was approved." }]) {
      await api.expect(201, "POST", `/v1/sessions/${sid}/lists/scripted/steps`, { body: step });
    }
    const { operationId } = await api.expect<{ operationId: string }>(202, "POST", `/v1/sessions/${sid}/lanes/main/operations`, { body: { kind: "prompt", prompt: "May I?" } });
    const waiting = await pollUntil(
      "the client tool call to wait",
      () => api.expect<{ snapshot: { operation: { runningTools?: { toolCallId: string; executor?: string }[] } | null } }>(200, "GET", `/v1/sessions/${sid}/lanes/main/snapshot`),
      (reply) => reply.snapshot.operation?.runningTools?.some((tool) => tool.executor === "client") === true,
    );
    const toolCallId = waiting.snapshot.operation?.runningTools?.find((tool) => tool.executor === "client")?.toolCallId ?? "";

    const blocks = fencedBlocks("docs/tools.md", "sh");
    expect(blocks).toHaveLength(6);
    const [answered] = await runShellBlocks(blocks.slice(4, 5), { baseUrl: server.baseUrl, key, vars: { SID: sid, OP: operationId, TOOL_CALL_ID: toolCallId } });
    expect(jsonValues(answered ?? "")).toEqual([{ accepted: true }]);
    expect(await settled(api, sid, operationId)).toMatchObject({ status: "completed" });
    const after = await api.expect<{ snapshot: { transcript: { type: string; message?: { role: string; toolName?: string; content: unknown; isError?: boolean } }[] } }>(200, "GET", `/v1/sessions/${sid}/lanes/main/snapshot`);
    const messages = after.snapshot.transcript.flatMap((entry) => (entry.message ? [entry.message] : []));
    expect(messages).toContainEqual(expect.objectContaining({ role: "toolResult", toolName: "approve", content: [{ type: "text", text: "Approved" }], isError: false }));
    expect(messages.at(-1)).toMatchObject({ role: "assistant", content: [{ type: "text", text: "It was approved." }] });

    // The MCP server the reader has: a local one with the two tools the doc allows and one more.
    const mcp = await startDocsMcpServer();
    closers.push(() => mcp.close());
    const [mcpBlock] = await runShellBlocks(blocks.slice(5), { baseUrl: server.baseUrl, key, vars: { SID: sid, MCP_URL: `${mcp.url}/mcp`, MCP_TOKEN: "mcp-doc-token" } });
    const [registered, lane] = jsonValues(mcpBlock ?? "");
    // The answer the doc shows, with this server's URL and time.
    const documented = jsonValues(fencedBlocks("docs/tools.md", "json").find((block) => block.includes('"skippedTools"')) ?? "")[0];
    expect(documented).toMatchObject({ name: "docs", status: "ready" });
    expect(registered).toEqual({ ...(typeof documented === "object" ? documented : {}), url: `${mcp.url}/mcp`, lastRefreshAt: expect.any(String) });
    expect(lane).toMatchObject({ activeToolNames: ["docs_search"] });
    expect(mcp.authorizations.length).toBeGreaterThan(0);
    expect(new Set(mcp.authorizations)).toEqual(new Set(["Bearer mcp-doc-token"]));
  }, 90_000);

  it("streams a lane over SSE with curl -N while a prompt is answered as a stream (docs/api-watch.md)", async () => {
    const { key, api } = await createTenant(new Api(server.baseUrl, readAdminToken()), "ssedoc");
    const sid = "sse-doc";
    await api.expect(201, "POST", "/v1/sessions", { body: { id: sid } });
    await api.expect(201, "PUT", `/v1/sessions/${sid}/lanes/main`, { body: {} });
    const blocks = fencedBlocks("docs/api-watch.md", "sh");
    expect(blocks).toHaveLength(2);
    const [watch, promptBlock] = blocks;
    // The stream never ends by itself: it runs as in a terminal of its own, until the run has ended.
    const stream = startShellBlock(watch ?? "", { baseUrl: server.baseUrl, key, vars: { SID: sid }, timeoutMs: 60_000 });
    running.push(stream);
    await stream.until(/^data: \{"type":"snapshot".*\n\n/m);
    const [answered] = await runShellBlocks([promptBlock ?? ""], { baseUrl: server.baseUrl, key, vars: { SID: sid } });
    const streamed = sseFrames(answered ?? "");
    // The lane stream has carried the prompt stream's last event (the run's end, or a later stats event).
    const lastId = streamed.filter((frame) => frame.event === "event").at(-1)?.id ?? "none";
    await stream.until(new RegExp(`^id: ${lastId.replaceAll(".", "\\.")}$`, "m"));
    const watched = sseFrames(await stream.stop());

    const [snapshot, ...events] = watched;
    expect(snapshot).toMatchObject({ event: "snapshot", id: expect.stringMatching(/^[0-9a-f]{12}\.\d+$/), data: { type: "snapshot", snapshot: { lane: "main" } } });
    expect(events.every((frame) => frame.event === "event" && /^[0-9a-f]{12}\.\d+$/.test(frame.id ?? ""))).toBe(true);
    for (const frame of watched) expect(frame.id?.split(".")[1]).toBe(String(seqOf(frame.data)));

    const result = streamed.at(-1);
    expect(result).toMatchObject({ event: "result", data: { kind: "run", status: "completed" } });
    expect(JSON.stringify(result?.data)).toContain('"text":"Hello"');
    const runEvents = streamed.slice(0, -1);
    expect(runEvents.map((frame) => eventType(frame.data))).toEqual(expect.arrayContaining(["run_start", "message_end", "run_end"]));
    expect(runEvents.every((frame) => frame.event === "event")).toBe(true);
    // The same events, with the same ids and data, as the lane stream carried them.
    for (const frame of runEvents) expect(events).toContainEqual(frame);
  }, 90_000);

  it("sets the tenant's default model on a provider key that points at a local model server (docs/providers.md)", async () => {
    const fixture = await startProviderFixture(["Hello", "from", "the", "fixture"]);
    closers.push(() => fixture.close());
    const { key, api } = await createTenant(new Api(server.baseUrl, readAdminToken()), "providersdoc");
    const blocks = fencedBlocks("docs/providers.md", "sh");
    expect(blocks).toHaveLength(2);
    // Block 1 puts a real OpenAI key with no base URL and prompts api.openai.com: not run (see the
    // top of this file). The key the reader has put instead: one whose base URL is a local server.
    await api.expect(200, "PUT", "/v1/providers/openai", { body: { apiKey: "sk-docs-provider-key-0042", baseUrl: fixture.baseUrl } });
    const [defaulted] = await runShellBlocks(blocks.slice(1), { baseUrl: server.baseUrl, key });
    expect(jsonValues(defaulted ?? "")).toEqual([{ provider: "openai", modelId: "gpt-5-mini" }]);
    // A lane created without a model gets it, and its prompt goes to that provider.
    await api.expect(201, "POST", "/v1/sessions", { body: { id: "providers-doc" } });
    await api.expect(201, "PUT", "/v1/sessions/providers-doc/lanes/main", { body: {} });
    const lane = await api.expect<{ configuration: { model: unknown } }>(200, "GET", "/v1/sessions/providers-doc/lanes/main");
    expect(lane.configuration.model).toEqual({ provider: "openai", modelId: "gpt-5-mini" });
    const answer = await api.expect<{ status: string }>(200, "POST", "/v1/sessions/providers-doc/lanes/main/prompt", { body: { prompt: "Hello!", wait: 30 } });
    expect(answer).toMatchObject({ status: "completed" });
    expect(JSON.stringify(answer)).toContain("Hello from the fixture");
    expect(fixture.requests).toEqual([expect.objectContaining({ path: "/v1/responses", authorization: "Bearer sk-docs-provider-key-0042", body: expect.objectContaining({ model: "gpt-5-mini" }) })]);
  }, 90_000);

  it("finds an end user's sessions, deletes them and the tenant, and schedules a weekday report, with the SDK (client/README.md blocks 2–4)", async () => {
    const admin = new Api(server.baseUrl, readAdminToken());
    // Blocks 2 and 3 on the tenant "acme" that block 3 names (its key is KEY).
    await admin.expect(201, "POST", "/v1/admin/tenants", { body: { id: "acme", name: "Acme" } });
    const { key: acmeKey } = await admin.expect<{ key: string }>(201, "POST", "/v1/admin/tenants/acme/keys", { body: { name: "docs" } });
    const blocks = fencedBlocks("client/README.md", "ts");
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    const [finding, deleting, scheduling] = blocks.slice(1, 4).map((block, index) => writeFromSources(scratch, `client-readme-${index + 2}.mts`, block));
    const env = { BASE: server.baseUrl, KEY: acmeKey, ADMIN_TOKEN: readAdminToken() };
    // Each block on its own type-checks as a file of a TypeScript app (strict), while they run.
    const typeChecked = typeCheck(scratch, [finding ?? "", deleting ?? "", scheduling ?? ""]);

    const found = (await runNode(finding ?? "", env)).split("\n");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^s_\S+ \{ user: 'u_42', plan: 'pro' \}$/);

    const deleted = (await runNode(deleting ?? "", env)).split("\n");
    expect(deleted[0]).toBe("1 sessions are being deleted");
    for (const line of deleted.slice(1)) expect(line).toMatch(/^\d+ \/ \d+$/);
    expect((await admin.request("GET", "/v1/admin/tenants/acme")).status).toBe(404);

    // Block 4 on a session `reports` with a lane `main`, created as docs/schedules.md creates them.
    const { key } = await createTenant(admin, "clientdoc");
    await runShellBlocks(fencedBlocks("docs/schedules.md", "sh").slice(0, 1), { baseUrl: server.baseUrl, key });
    const scheduled = (await runNode(scheduling ?? "", { ...env, KEY: key })).split("\n");
    expect(scheduled).toHaveLength(1);
    const nextRunAt = Number(scheduled[0]);
    expect(nextRunAt).toBeGreaterThan(Date.now());
    const berlin = new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Berlin", weekday: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(nextRunAt);
    expect(berlin).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:00$/);
    expect(await typeChecked).toBe("");
  }, 120_000);

  describe("the blocks that start the service itself, on its default port 8787, in a checkout of their own", () => {
    let checkout: string;
    beforeAll(() => {
      checkout = checkoutWithoutState();
    });
    afterAll(() => {
      if (checkout) rmSync(checkout, { recursive: true, force: true });
    });

    it("npm start serves on http://127.0.0.1:8787 and curl reads its health (README.md block 2)", async ({ skip }) => {
      if (!(await portFree(8787))) skip("port 8787 is taken on this machine (an npm start of your own?): the block's own default port");
      const blocks = fencedBlocks("README.md", "sh");
      expect(blocks).toHaveLength(4);
      // Two terminals: `npm start` keeps running in the first, the health check is typed in a second.
      const [serve, check] = (blocks[1] ?? "").trim().split("\n");
      expect(serve).toMatch(/^npm start\s+# http:\/\/127\.0\.0\.1:8787$/);
      const started = startShellBlock(serve ?? "", { baseUrl: server.baseUrl, key: "", cwd: checkout });
      running.push(started);
      await started.until(/Ready on http:\/\/127\.0\.0\.1:8787/, 60_000);
      const health = await pollUntil("the health check", () => runShellBlocks([check ?? ""], { baseUrl: server.baseUrl, key: "" }).catch(() => [""]), ([output]) => output !== "", 30_000);
      expect(jsonValues(health[0] ?? "")).toEqual([{ status: "ok" }]);
      // A first start writes .dev.vars with a fresh admin token, and prints it once; state is kept under .wrangler/state.
      expect(started.stdout()).toMatch(/Added to \.dev\.vars[\s\S]*ADMIN_TOKEN=\S{32,}/);
      expect(existsSync(join(checkout, ".wrangler/state"))).toBe(true);
      await started.stop();
    }, 120_000);

    it("npm start -- --dev-key prints a key of the tenant dev and the Inspector's address (docs/inspector.md)", async ({ skip }) => {
      if (!(await portFree(8787))) skip("port 8787 is taken on this machine (an npm start of your own?): the block's own default port");
      const blocks = fencedBlocks("docs/inspector.md", "sh");
      expect(blocks).toHaveLength(1);
      const started = startShellBlock(blocks[0] ?? "", { baseUrl: server.baseUrl, key: "", cwd: checkout });
      running.push(started);
      const printed = await started.until(/The Inspector \(paste the key there\): \S+/, 90_000);
      const key = /export KEY=(sk_\S+)/.exec(printed)?.[1] ?? "";
      expect(printed).toContain('A key of the local tenant "dev"');
      expect(/The Inspector \(paste the key there\): (\S+)/.exec(printed)?.[1]).toBe("http://127.0.0.1:8787/inspector");
      const page = await fetch("http://127.0.0.1:8787/inspector");
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      const me = await new Api("http://127.0.0.1:8787", key).expect<{ tenantId: string }>(200, "GET", "/v1/me");
      expect(me.tenantId).toBe("dev");
      await started.stop();
    }, 120_000);
  });
});

/** Prompts the lane `main` and waits for its answer: the operation's id. */
async function prompt(api: Api, sid: string, text: string): Promise<string> {
  const answer = await api.expect<{ operationId: string; status: string }>(200, "POST", `/v1/sessions/${sid}/lanes/main/prompt`, { body: { prompt: text, wait: 30 } });
  expect(answer.status).toBe("completed");
  return answer.operationId;
}

type Verify = (secret: string, headers: Record<string, string | undefined>, rawBody: string) => boolean;

/** The signature check of docs/webhooks.md, loaded from the doc's own text. */
async function documentedVerifier(): Promise<Verify> {
  return (await importDocModule<{ verify: Verify }>("docs/webhooks.md")).verify;
}

/** A server-sent event as curl printed it: its `event`, `id` and parsed `data` lines. */
interface SseFrame {
  event?: string;
  id?: string;
  data?: unknown;
}

/** The frames of an SSE stream's text (comments such as `: ping` left out). */
function sseFrames(text: string): SseFrame[] {
  return text
    .split(/\n\n+/)
    .map((chunk) => {
      const frame: SseFrame = {};
      for (const line of chunk.split("\n")) {
        const [, field, value = ""] = /^(event|id|data): ?(.*)$/.exec(line) ?? [];
        if (field === "event" || field === "id") frame[field] = value;
        if (field === "data") frame.data = JSON.parse(value);
      }
      return frame;
    })
    .filter((frame) => frame.event !== undefined);
}

/** `value[name]` of a JSON value curl printed, or undefined. */
function member(value: unknown, name: string): unknown {
  return typeof value === "object" && value !== null && name in value ? Object.getOwnPropertyDescriptor(value, name)?.value : undefined;
}

function seqOf(data: unknown): unknown {
  return member(data, "seq");
}

function eventType(data: unknown): unknown {
  return member(member(data, "event"), "type");
}

/** The reader's MCP server: `search` and `fetch_page` (the two the doc allows) and `delete_page`; records each request's Authorization. */
async function startDocsMcpServer(): Promise<LoopbackServer & { authorizations: string[] }> {
  const authorizations: string[] = [];
  const open = new Set<ServerResponse>();
  const server = createHttpServer((request, response) => {
    readBody(request)
      .then(async (raw) => {
        authorizations.push(request.headers.authorization ?? "");
        if (request.method !== "POST") {
          response.writeHead(405, { allow: "POST" }).end();
          return;
        }
        open.add(response);
        response.on("close", () => open.delete(response));
        const mcp = new McpServer({ name: "docs", version: "1.0.0" });
        mcp.registerTool("search", { description: "Searches the docs", inputSchema: { query: z.string() } }, ({ query }) => ({ content: [{ type: "text", text: `Nothing about ${query}` }] }));
        mcp.registerTool("fetch_page", { description: "Reads a page of the docs", inputSchema: { path: z.string() } }, ({ path }) => ({ content: [{ type: "text", text: `The page ${path}` }] }));
        mcp.registerTool("delete_page", { description: "Deletes a page of the docs", inputSchema: { path: z.string() } }, ({ path }) => ({ content: [{ type: "text", text: `Deleted ${path}` }] }));
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        await mcp.connect(transport);
        await transport.handleRequest(request, response, raw.length > 0 ? JSON.parse(raw) : undefined);
      })
      .catch(() => response.destroy());
  });
  return { ...(await listenOnLoopback(server, open)), authorizations };
}

/** A client/README.md example as a file of an app next to this repository, importing the SDK from its sources (as client-package.e2e.test.ts runs them). */
function writeFromSources(dir: string, name: string, block: string): string {
  const fromSources = block.replace('from "@durable-agent-sessions/client"', `from ${JSON.stringify(join(repo, "client/index.ts"))}`);
  expect(fromSources).toContain("client/index.ts");
  const file = join(dir, name);
  writeFileSync(file, fromSources);
  return file;
}

/** `tsc` over `files` with the options of a strict ES-module app (as client-package.e2e.test.ts checks the first example): answers its complaints, "" for none. */
async function typeCheck(dir: string, files: string[]): Promise<string> {
  const compilerOptions = {
    module: "nodenext",
    target: "es2023",
    lib: ["es2023", "dom"],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowImportingTsExtensions: true,
    typeRoots: [join(repo, "node_modules/@types")],
    types: ["node"],
  };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, files }));
  return run(join(repo, "node_modules/.bin/tsc"), ["-p", dir], { timeout: 90_000 }).then(
    ({ stdout }) => stdout.trim(),
    (error: { stdout?: string }) => error.stdout ?? String(error),
  );
}

/** `node <file>` with `env` set as the README says to set it; answers its output, trimmed. */
async function runNode(file: string, env: Record<string, string>): Promise<string> {
  const { stdout } = await run(process.execPath, [file], { env: { ...process.env, ...env }, timeout: 90_000 });
  return stdout.trim();
}

/**
 * A checkout of this repository with none of its local state: every top-level entry but
 * `.dev.vars`, `.wrangler` and `.git` is a link to the repository's, so `npm start` there writes
 * its own `.dev.vars` and `.wrangler/state`, as on a fresh clone.
 */
function checkoutWithoutState(): string {
  const dir = mkdtempSync(join(tmpdir(), "das-checkout-"));
  for (const entry of readdirSync(repo)) {
    if (![".dev.vars", ".wrangler", ".git"].includes(entry)) symlinkSync(join(repo, entry), join(dir, entry));
  }
  return dir;
}

/** Whether `port` on 127.0.0.1 can be listened on now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createNetServer();
    probe.once("error", () => resolve(false));
    probe.listen({ host: "127.0.0.1", port, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}
