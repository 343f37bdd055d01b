import type { JsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { ERROR_STATUS } from "../../schema/errors.ts";
import { createApp } from "../../worker/app.ts";
import { TOKEN_ROUTES } from "../../worker/middleware/token-scopes.ts";
import { CATALOG } from "../../worker/openapi/catalog.ts";
import type { CatalogRoute } from "../../worker/openapi/catalog-types.ts";
import { DOCS_TITLE } from "../../worker/openapi/docs-page.ts";
import { buildOpenApiDocument, type OpenApiDocument, type OpenApiOperation, type OpenApiParameter } from "../../worker/openapi/document.ts";
import { adminToken, call, newTenant } from "./helpers.ts";
import { conforms, mutations, servedRoutes } from "./openapi-helpers.ts";

// /openapi.json and /docs: the document covers exactly the routes the Hono app serves, its JSON
// Schemas say what the live routes accept (they come from the very schemas the routes validate
// with), and every error code it names is a documented one.

// The Inspector page and its two files are a page, not API routes (test/api/inspector-page.test.ts).
const META = new Set(["GET /health", "GET /openapi.json", "GET /docs", "GET /inspector", "GET /inspector/inspector.js", "GET /inspector/inspector.css"]);
const label = (route: CatalogRoute): string => `${route.method.toUpperCase()} ${route.path}`;

let doc: OpenApiDocument;
let tenant: { tenantId: string; key: string };
let adminTarget: { tenantId: string };
const components = (): Record<string, JsonSchema> => doc.components.schemas;

beforeAll(async () => {
  const response = await call("/openapi.json");
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  doc = await response.json<OpenApiDocument>();
  tenant = await newTenant("oa");
  // The admin routes' examples (a quota of 600 a minute among them) change this tenant, not the one the routes are called with.
  adminTarget = await newTenant("oa_admin");
  // Thousands of requests in a minute, far past the default request quota: this file is about the document.
  const quota = await call(`/v1/admin/tenants/${tenant.tenantId}/quotas`, { method: "PATCH", body: { requestsPerMinute: 1_000_000 }, token: adminToken() });
  expect(quota.status).toBe(200);
});

function operationOf(route: CatalogRoute): OpenApiOperation {
  const operation = doc.paths[route.path]?.[route.method];
  if (!operation) throw new Error(`${label(route)} is not in the document`);
  return operation;
}

const inlineParameters = (route: CatalogRoute): OpenApiParameter[] =>
  operationOf(route).parameters.filter((parameter): parameter is OpenApiParameter => !("$ref" in parameter));

function requestSchema(route: CatalogRoute): JsonSchema {
  const schema = operationOf(route).requestBody?.content["application/json"]?.schema;
  if (!schema) throw new Error(`${label(route)} documents no JSON body`);
  return schema;
}

const PATH_VALUES: Record<string, string> = { sid: "s_openapi_absent", lane: "main", opId: "op_1", entryId: "e_1", keyId: "key_1", name: "main", namespace: "app", key: "k" };

/** One request to the live route: path values filled in (overrides first), the caller's credential. */
/**
 * Registering an MCP server discovers its tools at once: the live routes get the local test
 * server's address instead of the catalog example's, so no test reaches the outside world.
 */
function offline(route: CatalogRoute, body: unknown): unknown {
  const example = route.example;
  const exampleUrl = typeof example === "object" && example !== null && "url" in example ? example.url : undefined;
  const discovers = route.operationId === "putMcpServer" || route.operationId === "putTenantMcpServer";
  if (!discovers || typeof body !== "object" || body === null || !("url" in body) || body.url !== exampleUrl) return body;
  return { ...body, url: `${inject("mcpServerUrl")}/mcp/openapi-example` };
}

function send(route: CatalogRoute, init: { body?: unknown; path?: Record<string, string>; query?: string; headers?: Record<string, string> } = {}): Promise<Response> {
  const values: Record<string, string> = { ...PATH_VALUES, tenantId: adminTarget.tenantId, ...init.path };
  const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? name));
  const token = route.auth === "admin" ? adminToken() : route.auth === "tenant" ? tenant.key : undefined;
  return call(`${path}${init.query ?? ""}`, {
    method: route.method.toUpperCase(),
    ...(init.body !== undefined && { rawBody: JSON.stringify(offline(route, init.body)) }),
    ...(token !== undefined && { token }),
    ...(init.headers && { headers: init.headers }),
  });
}

/** A query value as the document types it: `?limit=99999` is the number 99999 to an integer parameter. */
function queryValue(parameter: OpenApiParameter, text: string): unknown {
  const numeric = parameter.schema.type === "integer" || parameter.schema.type === "number";
  return numeric && /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
}

async function expectValidationFailed(response: Response, what: string): Promise<void> {
  const body = await response.json<{ error?: { code?: string } }>();
  expect({ what, status: response.status, code: body.error?.code }).toEqual({ what, status: 400, code: "ValidationFailed" });
}

describe("GET /openapi.json", () => {
  it("is an OpenAPI 3.1 document with info, tags, paths, components and security schemes, built once", async () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(Object.keys(doc.paths).length).toBeGreaterThan(30);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(["adminToken", "browserToken", "tenantKey"]);
    expect(doc).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument())));
    const again = await (await call("/openapi.json")).text();
    expect(JSON.parse(again)).toEqual(doc);
  });

  it("lists every route the Hono app serves, and no route it does not serve", () => {
    const served = servedRoutes(createApp());
    const documented = new Set(Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`)));
    expect([...served].filter((route) => !META.has(route) && !documented.has(route))).toEqual([]);
    expect([...documented].filter((route) => !served.has(route))).toEqual([]);
    expect(documented.size).toBe(CATALOG.length);
    expect(served.size).toBeGreaterThanOrEqual(CATALOG.length);
  });

  it("declares each path parameter, a unique operationId, its tag and its auth", () => {
    const ids = CATALOG.map((route) => route.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const tags = new Set(doc.tags.map((tag) => tag.name));
    for (const route of CATALOG) {
      const operation = operationOf(route);
      const inPath = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]);
      const declared = inlineParameters(route).filter((parameter) => parameter.in === "path");
      expect(declared.map((parameter) => parameter.name), label(route)).toEqual(inPath);
      expect(declared.every((parameter) => parameter.required)).toBe(true);
      expect(tags.has(operation.tags[0] ?? "")).toBe(true);
      const scheme = { tenant: "tenantKey", admin: "adminToken", none: undefined }[route.auth];
      // The routes a browser token may call offer it as an alternative, with the scope it needs.
      const token = TOKEN_ROUTES.find((entry) => entry.method === route.method && entry.path === route.path);
      expect(operation.security, label(route)).toEqual([...(scheme ? [{ [scheme]: [] }] : []), ...(token ? [{ browserToken: [token.scope] }] : [])]);
      const idempotency = operation.parameters.some((parameter) => "$ref" in parameter && parameter.$ref === "#/components/parameters/IdempotencyKey");
      expect(idempotency, label(route)).toBe(route.idempotent === true);
    }
  });

  it("names only catalogued routes in the browser-token table (the scope rules follow the routes)", () => {
    const catalogued = new Set(CATALOG.map((route) => `${route.method} ${route.path}`));
    expect(TOKEN_ROUTES.filter((route) => !catalogued.has(`${route.method} ${route.path}`))).toEqual([]);
  });

  it("names only documented error codes, each with its status, and the ApiError component lists them all", () => {
    expect(doc.components.schemas.ApiError).toMatchObject({ properties: { code: { enum: Object.keys(ERROR_STATUS) } }, "x-status-by-code": ERROR_STATUS });
    for (const route of CATALOG) {
      const named = new Set<string>();
      for (const [status, response] of Object.entries(operationOf(route).responses)) {
        for (const code of response["x-error-codes"] ?? []) {
          expect(code in ERROR_STATUS, code).toBe(true);
          expect(Number(status), `${label(route)} ${code}`).toBe(route.errorStatus?.[code] ?? ERROR_STATUS[code]);
          named.add(code);
        }
      }
      expect(route.errors.filter((code) => !named.has(code)), label(route)).toEqual([]);
      if (route.auth !== "none") expect(named.has("Unauthenticated"), label(route)).toBe(true);
    }
  });

  it("names the server it is served from, and documents 429 RateLimited with Retry-After on every route", () => {
    expect(doc.servers).toEqual([{ url: "/", description: expect.any(String) }]);
    for (const route of CATALOG) {
      const limited = operationOf(route).responses["429"];
      expect({ route: label(route), codes: limited?.["x-error-codes"] }).toEqual({ route: label(route), codes: ["RateLimited"] });
      expect(limited?.headers?.["Retry-After"], label(route)).toBeDefined();
    }
  });

  it("documents an input message's timestamp as optional (the server stamps it) and a stored one's as required", () => {
    const required = (name: string): string[] => {
      const schema: unknown = doc.components.schemas[name];
      const options = typeof schema === "object" && schema !== null && "oneOf" in schema && Array.isArray(schema.oneOf) ? schema.oneOf : [];
      return options.flatMap((option: unknown) => (typeof option === "object" && option !== null && "required" in option && Array.isArray(option.required) ? option.required : []));
    };
    expect(required("AgentMessageInput")).toContain("role");
    expect(required("AgentMessageInput")).not.toContain("timestamp");
    expect(required("AgentMessage")).toContain("timestamp");
  });

  it("says what a caller-chosen operationId must be wherever a body takes one", () => {
    const bodies = CATALOG.filter((route) => route.method === "post" && /\/lanes\/\{lane\}\/(prompt|navigate|compact)$/.test(route.path)).map((route) => JSON.stringify(requestSchema(route)));
    expect(bodies).toHaveLength(3);
    for (const body of bodies) expect(body).toContain("A UUIDv7 not used before in this session");
  });

  it("resolves every $ref to a component", () => {
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]*"/g) ?? [];
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of new Set(refs)) {
      const [, kind, name = ""] = /"#\/components\/(schemas|parameters|headers)\/([^"]+)"$/.exec(ref) ?? [];
      const target = kind === "schemas" ? doc.components.schemas[name] : kind === "parameters" ? doc.components.parameters[name] : doc.components.headers[name];
      expect(target, ref).toBeDefined();
    }
  });
});

describe("the document's schemas are the routes' schemas", () => {
  const withBody = CATALOG.filter((route) => route.body);

  it("each body example and its variations: the JSON Schema and the route's valibot schema agree", () => {
    expect(withBody.length).toBeGreaterThan(10);
    for (const route of withBody) {
      const schema = requestSchema(route);
      const body = route.body;
      if (!body) continue;
      expect(route.example, label(route)).toBeDefined();
      expect(conforms(schema, route.example, components()), label(route)).toBe(true);
      for (const variant of [route.example, ...mutations(route.example)]) {
        expect(conforms(schema, variant, components()), `${label(route)} ${JSON.stringify(variant)}`).toBe(v.safeParse(body, variant).success);
      }
    }
  });

  it("a live route answers 400 to every body variation its JSON Schema forbids, and accepts its example", async () => {
    for (const route of withBody) {
      const schema = requestSchema(route);
      const forbidden = mutations(route.example).filter((variant) => !conforms(schema, variant, components()));
      if (route.body !== CATALOG.find((other) => other.operationId === "putValue")?.body) expect(forbidden.length, label(route)).toBeGreaterThan(3);
      const answers = await Promise.all(forbidden.map((body) => send(route, { body })));
      for (const [index, response] of answers.entries()) await expectValidationFailed(response, `${label(route)} ${JSON.stringify(forbidden[index])}`);
      const accepted = await send(route, { body: route.example });
      const answer = await accepted.json<{ error?: { code?: string } }>().catch(() => ({ error: undefined }));
      expect({ route: label(route), code: answer.error?.code }).not.toEqual({ route: label(route), code: "ValidationFailed" });
    }
  });

  it("a live route answers 400 to path and query values their JSON Schemas forbid", async () => {
    let checked = 0;
    for (const route of CATALOG) {
      for (const parameter of inlineParameters(route)) {
        for (const bad of ["bad id!", "99999", "-1"]) {
          if (conforms(parameter.schema, queryValue(parameter, bad), components())) continue;
          const response = parameter.in === "path"
            ? await send(route, { path: { [parameter.name]: bad }, body: route.example })
            : await send(route, { query: `?${parameter.name}=${encodeURIComponent(bad)}`, body: route.example });
          await expectValidationFailed(response, `${label(route)} ${parameter.name}=${bad}`);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(60);
  });

  it("creating POSTs check Idempotency-Key; other routes ignore it", async () => {
    for (const route of CATALOG.filter((candidate) => candidate.method === "post")) {
      const response = await send(route, { body: route.example, headers: { "idempotency-key": "not a key" } });
      const body = await response.json<{ error?: { code?: string; message?: string } }>();
      const refused = response.status === 400 && body.error?.message?.startsWith("Idempotency-Key") === true;
      expect({ route: label(route), refused }).toEqual({ route: label(route), refused: route.idempotent === true });
    }
  });
});

describe("GET /docs", () => {
  it("is a self-contained HTML page that renders /openapi.json", async () => {
    const response = await call("/docs");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    expect(response.headers.get("content-security-policy")).toContain("default-src 'none'");
    // Never framed by another page (clickjacking), as the Inspector.
    expect(response.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await response.text();
    expect(html).toContain(`<title>${DOCS_TITLE}</title>`);
    expect(html).toContain('fetch("/openapi.json")');
    expect(html).not.toMatch(/https?:\/\/|["'(]\/\/|<link\b|\bsrc\s*=/i);
    expect(html.split("\n").length).toBeLessThan(150);
  });
});
