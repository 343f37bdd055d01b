import * as v from "valibot";
import { expect } from "vitest";
import { CATALOG } from "../../worker/openapi/catalog.ts";
import type { CatalogRoute } from "../../worker/openapi/catalog-types.ts";
import { jsonSchemaOf, type OpenApiDocument, type OpenApiResponse } from "../../worker/openapi/document.ts";
import { adminToken, call } from "./helpers.ts";
import { conforms } from "./openapi-helpers.ts";

// Real answers against the served OpenAPI document: each request goes through the live Hono app,
// and its answer must be one the document lists for the route (status, body against the status's
// JSON Schema, X-Request-Id). Every answer checked is recorded, so a test can ask which documented
// answers it has seen.

export interface Request {
  path?: Record<string, string>;
  query?: Record<string, string | number>;
  body?: unknown;
  /** A JSON Lines body (`application/x-ndjson`), sent as it is. */
  lines?: string;
  /** The caller: a tenant key; admin routes use the admin token, public routes none. */
  key?: string;
  headers?: Record<string, string>;
}

export interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function routeOf(operationId: string): CatalogRoute {
  const route = CATALOG.find((entry) => entry.operationId === operationId);
  if (!route) throw new Error(`no catalog route ${operationId}`);
  return route;
}

export class AnswerChecker {
  /** `operationId status` of every answer checked. */
  readonly seen = new Set<string>();

  constructor(private readonly doc: OpenApiDocument) {}

  /** Sends the request and checks its answer against the document, whatever the status. */
  async send(operationId: string, request: Request = {}): Promise<Answer> {
    const route = routeOf(operationId);
    const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = request.path?.[name];
      if (value === undefined) throw new Error(`${operationId}: no value for {${name}}`);
      return encodeURIComponent(value);
    });
    const query = new URLSearchParams(Object.entries(request.query ?? {}).map(([name, value]) => [name, String(value)])).toString();
    const token = route.auth === "admin" ? adminToken() : request.key;
    const response = await call(`${path}${query ? `?${query}` : ""}`, {
      method: route.method.toUpperCase(),
      ...(request.body !== undefined && { body: request.body }),
      ...(request.lines !== undefined && { rawBody: request.lines }),
      ...(token !== undefined && { token }),
      headers: { ...(request.lines !== undefined && { "content-type": "application/x-ndjson" }), ...request.headers },
    });
    const text = await response.text();
    const type = response.headers.get("content-type") ?? "";
    // A JSON Lines answer is checked line by line against the schema of one line.
    const ndjson = type.startsWith("application/x-ndjson");
    const body: unknown = type.startsWith("application/json") ? JSON.parse(text) : ndjson ? text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line)) : text;
    const what = `${operationId} ${response.status}`;
    const documented = this.documented(route, response.status);
    expect(documented, `${what} is not a documented answer: ${text.slice(0, 500)}`).toBeDefined();
    const media = documented?.content?.[response.headers.get("content-type")?.split(";")[0] ?? ""];
    if (documented?.content) {
      expect(media?.schema, `${what}: no schema for ${response.headers.get("content-type")}`).toBeDefined();
      const schema = media?.schema;
      const items = ndjson && Array.isArray(body) ? body : [body];
      if (schema) for (const item of items) expect(conforms(schema, item, this.doc.components.schemas), `${what} contradicts its schema: ${JSON.stringify(item).slice(0, 2000)}`).toBe(true);
    } else {
      expect(text, `${what} has a body its document does not`).toBe("");
    }
    expect(response.headers.get("x-request-id"), `${what}: X-Request-Id`).toMatch(UUID);
    if (response.headers.has("idempotency-replayed")) expect(documented?.headers?.["Idempotency-Replayed"], `${what}: Idempotency-Replayed`).toBeDefined();
    this.seen.add(what);
    return { status: response.status, headers: response.headers, body };
  }

  /**
   * Sends the request, expects `status`, and reads the answer with `schema`, which must be the
   * schema the catalog documents for it (so the answer's type is the route's).
   */
  async expect<S extends v.GenericSchema>(operationId: string, status: number, schema: S, request: Request = {}): Promise<v.InferOutput<S>> {
    const documented = routeOf(operationId).responses[status]?.schema;
    expect(documented && jsonSchemaOf(documented), `${operationId} ${status} documents another schema`).toEqual(jsonSchemaOf(schema));
    const answer = await this.send(operationId, request);
    expect(answer.status, `${operationId}: ${JSON.stringify(answer.body).slice(0, 500)}`).toBe(status);
    return v.parse(schema, answer.body);
  }

  /** Sends the request and expects `status`, an answer without a body (204) or a refusal. */
  async status(operationId: string, status: number, request: Request = {}): Promise<Answer> {
    const answer = await this.send(operationId, request);
    expect(answer.status, `${operationId}: ${JSON.stringify(answer.body).slice(0, 500)}`).toBe(status);
    return answer;
  }

  private documented(route: CatalogRoute, status: number): OpenApiResponse | undefined {
    return this.doc.paths[route.path]?.[route.method]?.responses[String(status)];
  }
}
