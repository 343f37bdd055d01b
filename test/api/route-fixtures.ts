import type { OpenApiDocument, OpenApiOperation, OpenApiParameter } from "../../worker/openapi/document.ts";
import { adminToken, call, newTenant } from "./helpers.ts";
import { mcpScope } from "./mcp-helpers.ts";
import { receiver } from "./webhooks-helpers.ts";

// One of every tenant-owned resource that a route of /openapi.json names in its path, made for one
// tenant through the API, and the value of every path parameter for every route (QUALITY R3–R5:
// test/api/fuzz.test.ts, route-isolation.test.ts and route-idempotency.test.ts call every route with
// these). A path parameter this table does not know, or a `{name}`/`{id}` under a path family it
// does not know, has no value: those tests then fail naming the route, so a route added later gets
// its fixture here before it can pass.

/** One operation of the document, as the generic route tests walk them. */
export interface DocumentRoute {
  method: string;
  template: string;
  op: OpenApiOperation;
  /** `METHOD /template`, the name a failure reports. */
  name: string;
}

export function documentRoutes(doc: OpenApiDocument): DocumentRoute[] {
  return Object.entries(doc.paths).flatMap(([template, item]) =>
    Object.entries(item).map(([method, op]): DocumentRoute => ({ method: method.toUpperCase(), template, op, name: `${method.toUpperCase()} ${template}` })),
  );
}

export const pathParamsOf = (template: string): string[] => [...template.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? "");
export const takesIdempotencyKey = (op: OpenApiOperation): boolean => op.parameters.some((parameter) => "$ref" in parameter && parameter.$ref.endsWith("/IdempotencyKey"));
export const queryParamsOf = (op: OpenApiOperation): OpenApiParameter[] => op.parameters.filter((p): p is OpenApiParameter => !("$ref" in p) && p.in === "query");

/** What `makeResources` made for one tenant. */
export interface Resources {
  tenantId: string;
  key: string;
  keyId: string;
  sid: string;
  lane: string;
  opId: string;
  entryId: string;
  webhookId: string;
  scheduleId: string;
  agentId: string;
  importId: string;
  /** The local MCP server scope the tenant's and the session's servers point at. */
  mcpUrl: string;
}

/** Names of the name-addressed resources, by path family (the `{name}` parameter). */
export const NAMES = { skill: "review", template: "brief", branch: "side", sessionTool: "ask", tenantTool: "lookup", mcp: "docs" } as const;

/** `{name}` and `{id}` mean another resource under each path family. */
function familyValue(r: Resources, template: string, param: "name" | "id"): string | undefined {
  const families: [RegExp, string, string | undefined][] = [
    [/^\/v1\/sessions\/\{sid\}\/skills\//, "name", NAMES.skill],
    [/^\/v1\/sessions\/\{sid\}\/templates\//, "name", NAMES.template],
    [/^\/v1\/sessions\/\{sid\}\/branches\//, "name", NAMES.branch],
    [/^\/v1\/sessions\/\{sid\}\/tools\//, "name", NAMES.sessionTool],
    [/^\/v1\/sessions\/\{sid\}\/mcp-servers\//, "name", NAMES.mcp],
    [/^\/v1\/tools\//, "name", NAMES.tenantTool],
    [/^\/v1\/mcp-servers\//, "name", NAMES.mcp],
    [/^\/v1\/webhooks\//, "id", r.webhookId],
    [/^\/v1\/sessions\/\{sid\}\/lanes\/\{lane\}\/schedules\//, "id", r.scheduleId],
    [/^\/v1\/agents\//, "id", r.agentId],
  ];
  return families.find(([pattern, name]) => name === param && pattern.test(template))?.[2];
}

/**
 * The fixture per path parameter: the value of `param` in `template` for these resources, or
 * undefined when the table has none (the caller fails naming the route).
 */
export function fixtureValue(r: Resources, template: string, param: string): string | undefined {
  switch (param) {
    case "tenantId":
      return r.tenantId;
    case "keyId":
      return r.keyId;
    case "provider":
      return "openai";
    case "sid":
      return r.sid;
    case "chatId":
      // The AI SDK transport's resumption names the chat by the session id (docs/ai-sdk.md).
      return r.sid;
    case "lane":
      return r.lane;
    case "opId":
      return r.opId;
    case "entryId":
      return r.entryId;
    case "toolCallId":
      // No run of the fixtures waits on a client tool: a well-formed id no call has.
      return "call_fixture";
    case "namespace":
      return "app";
    case "key":
      return "k";
    case "importId":
      return r.importId;
    case "part":
      return "1";
    case "version":
      return "1";
    case "name":
    case "id":
      return familyValue(r, template, param);
    default:
      return undefined;
  }
}

/** The route's parameters without a fixture, as `{param}` names (empty when every one has one). */
export function missingFixtures(r: Resources, template: string): string[] {
  return pathParamsOf(template).filter((param) => fixtureValue(r, template, param) === undefined).map((param) => `{${param}}`);
}

/** The route's path with every parameter filled from the fixtures (`override` first). */
export function fillPath(r: Resources, template: string, override: Record<string, string> = {}): string {
  return template.replace(/\{(\w+)\}/g, (_, param: string) => {
    const value = override[param] ?? fixtureValue(r, template, param);
    if (value === undefined) throw new Error(`no fixture for {${param}} of ${template}: add one to test/api/route-fixtures.ts`);
    return override[param] ?? encodeURIComponent(value);
  });
}

async function expectStatus<T>(what: string, response: Response, ...statuses: number[]): Promise<T> {
  const text = await response.text();
  if (!statuses.includes(response.status)) throw new Error(`fixture ${what}: ${response.status} ${text.slice(0, 300)}`);
  return (text === "" ? undefined : JSON.parse(text)) as T;
}

/**
 * A fresh tenant holding one of each resource: a session (lane `main` with one settled run, a value,
 * a list, branch `side`, a label, a skill, a template, a client tool, an MCP server), a webhook, a
 * schedule (due next year: it never fires during a test), an agent, a tenant tool, a tenant MCP
 * server, provider key and default model, an open import. Nothing of it changes by itself once
 * made: the webhook listens to no event the tests cause.
 */
export async function makeResources(prefix: string): Promise<Resources> {
  const tenant = await newTenant(prefix);
  const { key } = tenant;
  const sid = `${prefix}_s`;
  const base = `/v1/sessions/${sid}`;
  const put = (path: string, body: unknown) => call(path, { method: "PUT", body, token: key });
  const mcp = mcpScope(prefix);
  await expectStatus("session", await call("/v1/sessions", { body: { id: sid, name: prefix, metadata: { fixture: prefix } }, token: key }), 201);
  await expectStatus("lane", await put(`${base}/lanes/main`, {}), 201);
  const record = await expectStatus<{ operationId: string; status: string }>("prompt", await call(`${base}/lanes/main/prompt`, { body: { prompt: "hello", wait: 10 }, token: key }), 200);
  if (record.status !== "completed") throw new Error(`fixture prompt: ${JSON.stringify(record)}`);
  const entries = await expectStatus<{ items: { id: string }[] }>("entries", await call(`${base}/entries`, { token: key }), 200);
  const entryId = entries.items[0]?.id ?? "missing";
  await expectStatus("value", await put(`${base}/values/app/k`, { theme: "dark" }), 200);
  await expectStatus("list", await call(`${base}/lists/app/k`, { body: { step: 1 }, token: key }), 201);
  await expectStatus("branch", await call(`${base}/branches`, { body: { name: NAMES.branch, at: null }, token: key }), 201);
  await expectStatus("label", await put(`${base}/entries/${entryId}/label`, { label: "checkpoint" }), 200);
  await expectStatus("skill", await put(`${base}/skills/${NAMES.skill}`, { description: "Reviews a diff", content: "Review the change." }), 200);
  await expectStatus("template", await put(`${base}/templates/${NAMES.template}`, { content: "Summarize $1." }), 200);
  await expectStatus("session tool", await put(`${base}/tools/${NAMES.sessionTool}`, { kind: "client", description: "Asks the user", parameters: { type: "object" } }), 201);
  await expectStatus("session mcp", await put(`${base}/mcp-servers/${NAMES.mcp}`, { url: mcp.url, allow: ["echo"] }), 201);
  const schedule = await expectStatus<{ id: string }>("schedule", await call(`${base}/lanes/main/schedules`, { body: { at: Date.now() + 365 * 24 * 3_600_000, prompt: "later" }, token: key }), 201);
  const webhook = await expectStatus<{ id: string }>("webhook", await call("/v1/webhooks", { body: { url: receiver(prefix).url("ok"), events: ["schedule.skipped"] }, token: key }), 201);
  const agent = await expectStatus<{ id: string }>("agent", await call("/v1/agents", { body: { id: `${prefix}_agent`, model: { provider: "scripted", modelId: "echo" } }, token: key }), 201);
  await expectStatus("tenant tool", await put(`/v1/tools/${NAMES.tenantTool}`, { kind: "client", description: "Looks up", parameters: { type: "object" } }), 201);
  await expectStatus("tenant mcp", await put(`/v1/mcp-servers/${NAMES.mcp}`, { url: mcp.url, allow: ["echo"] }), 201);
  await expectStatus("provider", await put("/v1/providers/openai", { apiKey: "sk-fixture" }), 200);
  await expectStatus("default model", await put("/v1/me/default-model", { provider: "scripted", modelId: "echo" }), 200);
  const opened = await expectStatus<{ importId: string }>("import", await call("/v1/imports", { body: {}, token: key }), 201);
  // The run's usage reaches /v1/me after the commit (forwarded): let it land before any read-back.
  for (let i = 0; i < 300; i++) {
    const me = await expectStatus<{ usage?: { totalTokens: number } }>("me", await call("/v1/me", { token: key }), 200);
    if (me.usage === undefined || me.usage.totalTokens > 0) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return {
    tenantId: tenant.tenantId, key, keyId: tenant.keyId, sid, lane: "main", opId: record.operationId, entryId,
    webhookId: webhook.id, scheduleId: schedule.id, agentId: agent.id, importId: opened.importId, mcpUrl: mcp.url,
  };
}

/**
 * Fields that change without anything being written through a route: the watch counter of a
 * snapshot jumps a reserved block when an idle object restarts (watch-hub.ts); a key's
 * `lastUsedAt` moves with every authenticated request.
 */
function stripVolatile(template: string, body: unknown): unknown {
  if (typeof body !== "object" || body === null) return body;
  if (template.endsWith("/snapshot") && "seq" in body) {
    const { seq: _, ...rest } = body;
    return rest;
  }
  if (template.endsWith("/keys")) return JSON.parse(JSON.stringify(body, (name: string, value: unknown) => (name === "lastUsedAt" ? undefined : value)));
  return body;
}

/**
 * GET routes that are not a read of the tenant's state: streams, sockets, the documents of the
 * service, and the admin's list of every tenant (other test files add to it meanwhile).
 */
const NOT_READS = [/\/watch$/, /\/events$/, /\/ai-sdk\/\{chatId\}\/stream$/, /^\/(health|docs|openapi\.json)$/, /^\/v1\/admin\/tenants$/];

/**
 * Everything the tenant can read, through every GET route of the document (the admin ones with the
 * admin token) filled from its fixtures: a route added later is read back too. Used to show that
 * nothing changed (refused requests, another tenant's calls).
 */
export async function readBack(doc: OpenApiDocument, r: Resources): Promise<Record<string, unknown>> {
  const reads = documentRoutes(doc).filter((route) => route.method === "GET" && !NOT_READS.some((pattern) => pattern.test(route.template)));
  const out: Record<string, unknown> = {};
  await Promise.all(reads.map(async (route) => {
    const token = route.op["x-auth"] === "admin" ? adminToken() : r.key;
    const response = await call(fillPath(r, route.template), { token });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch { /* an export (JSON Lines) is compared as text */ }
    out[route.name] = { status: response.status, body: stripVolatile(route.template, body) };
  }));
  return out;
}
