import { beforeAll, describe, expect, it } from "vitest";
import type { OpenApiDocument } from "../../worker/openapi/document.ts";
import { mint } from "./browser-token-helpers.ts";
import { exportText } from "./data-helpers.ts";
import { call, newTenant } from "./helpers.ts";
import { documentRoutes, fillPath, makeResources, missingFixtures, pathParamsOf, readBack, type DocumentRoute, type Resources } from "./route-fixtures.ts";

// QUALITY R4 over every route of /openapi.json: tenant A holds one of every resource
// (route-fixtures.ts); tenant B calls every route with A's ids in the path and a valid request
// otherwise, and a browser token of another session calls every route of A's session. Every
// answer is the documented refusal (404 for another tenant's resource, 403 TokenScope for a
// token, 401 for a tenant key on an admin route), listings of B show nothing of A's, and A reads
// back exactly what it read before, through every GET route. A route of the document that this file
// cannot classify (a path parameter without a fixture, a route without a tenant resource in its
// path that is not listed below) fails the test by name.

let doc: OpenApiDocument;
let a: Resources;
let b: { tenantId: string; key: string };
let importBody: string;

beforeAll(async () => {
  doc = await (await call("/openapi.json")).json<OpenApiDocument>();
  a = await makeResources("isoa");
  b = await newTenant("isob");
  importBody = await exportText(a.key, a.sid);
}, 60_000);

/** Path parameters that name a resource of the tenant: a route holding one answers another tenant 404. */
const TENANT_OWNED = new Set(["sid", "importId", "id", "provider", "name"]);

/**
 * Routes whose path names no resource of another tenant: B's call acts on B's own tenant (its
 * answer is given here), and A's read-back shows it touched nothing of A's. `lists` marks a listing
 * that must show nothing of A's. A route with a name-addressed path (a tool's, a provider's) that
 * B may hold under the same name is here too: B's PUT makes B's own.
 */
const OWN_TENANT: Record<string, { status: number; lists?: true; why: string }> = {
  "GET /v1/me": { status: 200, lists: true, why: "B's own record" },
  "PUT /v1/me/default-model": { status: 200, why: "B's own default" },
  "DELETE /v1/me/default-model": { status: 204, why: "B's own default" },
  "GET /v1/models": { status: 200, lists: true, why: "B's models" },
  "GET /v1/providers": { status: 200, lists: true, why: "B's provider keys" },
  "PUT /v1/providers/{provider}": { status: 200, why: "a provider is a name, not an id: B sets its own key" },
  "DELETE /v1/providers/{provider}": { status: 204, why: "B removes its own key (idempotent)" },
  "POST /v1/sessions": { status: 201, why: "B's session under A's id is B's own" },
  "GET /v1/sessions": { status: 200, lists: true, why: "B's sessions" },
  "DELETE /v1/sessions": { status: 202, why: "A's metadata filter matches none of B's sessions" },
  "POST /v1/sessions/import": { status: 201, why: "B imports A's export (which it could only have been given) as B's own session" },
  "POST /v1/imports": { status: 201, why: "B's own import" },
  "POST /v1/webhooks": { status: 201, why: "B's own endpoint" },
  "GET /v1/webhooks": { status: 200, lists: true, why: "B's endpoints" },
  "GET /v1/schedules": { status: 200, lists: true, why: "B's schedules" },
  "POST /v1/agents": { status: 201, why: "B's agent under A's agent id is B's own" },
  "GET /v1/agents": { status: 200, lists: true, why: "B's agents" },
  "GET /v1/tools": { status: 200, lists: true, why: "B's tenant tools" },
  "PUT /v1/tools/{name}": { status: 201, why: "a tool is named by its tenant: B makes its own" },
  "GET /v1/mcp-servers": { status: 200, lists: true, why: "B's MCP servers" },
  "PUT /v1/mcp-servers/{name}": { status: 201, why: "a server is named by its tenant: B makes its own" },
};

/** Bodies and queries besides the document's example, so that the request is valid apart from whose resource it names. */
function requestOf(route: DocumentRoute): { path: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } {
  const path = fillPath(a, route.template);
  const example = route.op.requestBody?.content["application/json"]?.example;
  switch (route.name) {
    case "POST /v1/sessions":
      return { path, body: { id: a.sid } };
    case "POST /v1/agents":
      return { path, body: { id: a.agentId, model: { provider: "scripted", modelId: "echo" } } };
    case "DELETE /v1/sessions":
      return { path: `${path}?metadata.fixture=${a.sid.replace(/_s$/, "")}` };
    case "POST /v1/sessions/import":
      return { path: `${path}?id=${a.sid}_b`, rawBody: importBody, headers: { "content-type": "application/x-ndjson" } };
    case "PUT /v1/imports/{importId}/parts/{part}":
      return { path, rawBody: importBody, headers: { "content-type": "application/x-ndjson" } };
    case "PUT /v1/mcp-servers/{name}":
    case "PUT /v1/sessions/{sid}/mcp-servers/{name}":
      return { path, body: { url: a.mcpUrl, allow: ["echo"] } };
    case "POST /v1/webhooks":
      return { path, body: { url: "https://hooks.example.com/b", events: ["schedule.skipped"] } };
  }
  if (route.template.endsWith("/watch")) return { path, headers: { upgrade: "websocket" } };
  if (route.template.endsWith("/events")) return { path, headers: { accept: "text/event-stream" } };
  return { path, ...(example !== undefined && { body: example }) };
}

const send = (route: DocumentRoute, token: string) => {
  const request = requestOf(route);
  return call(request.path, { method: route.method, token, ...(request.body !== undefined && { body: request.body }), ...(request.rawBody !== undefined && { rawBody: request.rawBody }), headers: request.headers ?? {} });
};

/** What B's answer must be: 404 when the path names A's resource, else the listed answer. */
function expectedOf(route: DocumentRoute): { status: number; lists?: true } | string {
  if (route.op["x-auth"] === "admin") return { status: 401 };
  const own = OWN_TENANT[route.name];
  if (own) return own;
  const missing = missingFixtures(a, route.template);
  if (missing.length > 0) return `no fixture for ${missing.join(", ")} (test/api/route-fixtures.ts)`;
  if (pathParamsOf(route.template).some((param) => TENANT_OWNED.has(param))) return { status: 404 };
  return "no tenant resource in its path and not listed in OWN_TENANT";
}

/** An answer's status and text; a stream or socket that was opened after all is closed unread (and reported by its status). */
async function answer(response: Response): Promise<{ status: number; text: string }> {
  if (response.webSocket) {
    response.webSocket.accept();
    response.webSocket.close(1000);
    return { status: response.status, text: "" };
  }
  if (response.headers.get("content-type")?.includes("text/event-stream")) {
    await response.body?.cancel();
    return { status: response.status, text: "" };
  }
  return { status: response.status, text: await response.text() };
}

const tenantRoutes = (): DocumentRoute[] => documentRoutes(doc).filter((route) => route.op["x-auth"] !== "none");

describe("tenant isolation over every route (QUALITY R4)", () => {
  it("another tenant gets 404 on every route naming A's resources, its listings show none of them, and A reads back the same", { timeout: 120_000 }, async () => {
    const before = await readBack(doc, a);
    const problems: string[] = [];
    const foreign = [a.tenantId, a.sid, a.opId, a.entryId, a.webhookId, a.scheduleId, a.importId];
    const classified = tenantRoutes().map((route) => ({ route, expected: expectedOf(route) }));
    for (const { route, expected } of classified) if (typeof expected === "string") problems.push(`${route.name}: ${expected}`);
    const names = new Set(classified.map(({ route }) => route.name));
    for (const name of Object.keys(OWN_TENANT)) if (!names.has(name)) problems.push(`${name}: listed in OWN_TENANT but not in /openapi.json`);
    // Routes naming A's resources first, then B's listings, then B's own creations (a session
    // under A's session id): B would meet its own resource otherwise.
    const rank = (name: string): number => (OWN_TENANT[name] === undefined ? 0 : OWN_TENANT[name].lists ? 1 : 2);
    const ordered = classified.flatMap(({ route, expected }) => (typeof expected === "string" ? [] : [{ route, expected }]));
    ordered.sort((x, y) => rank(x.route.name) - rank(y.route.name));
    for (const { route, expected } of ordered) {
      const { status, text } = await answer(await send(route, b.key));
      if (status !== expected.status) problems.push(`${route.name}: ${status} (expected ${expected.status}) ${text.slice(0, 160)}`);
      if (expected.lists) {
        const leaked = foreign.filter((id) => text.includes(id));
        if (leaked.length > 0) problems.push(`${route.name}: B's listing shows A's ${leaked.join(", ")}`);
      }
    }
    expect(problems).toEqual([]);
    expect(await readBack(doc, a)).toEqual(before);
  });

  it("a browser token of another session is refused 403 TokenScope on every route of A's session, and A reads back the same", { timeout: 60_000 }, async () => {
    const other = await call("/v1/sessions", { body: { id: `${a.sid}_other` }, token: a.key });
    expect(other.status).toBe(201);
    await call(`/v1/sessions/${a.sid}_other/lanes/main`, { method: "PUT", token: a.key });
    const { token } = await mint(`${a.sid}_other`, a.key, { scopes: ["watch", "prompt"] });
    const before = await readBack(doc, a);
    const problems: string[] = [];
    for (const route of tenantRoutes().filter((candidate) => candidate.template.startsWith("/v1/sessions/{sid}"))) {
      if (missingFixtures(a, route.template).length > 0) continue;
      const { status, text } = await answer(await send(route, token));
      if (status !== 403 || !text.includes('"TokenScope"')) problems.push(`${route.name}: ${status} ${text.slice(0, 160)}`);
    }
    expect(problems).toEqual([]);
    expect(await readBack(doc, a)).toEqual(before);
  });
});
