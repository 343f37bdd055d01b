import { beforeAll, describe, expect, it } from "vitest";
import type { OpenApiDocument, OpenApiOperation, OpenApiParameter } from "../../worker/openapi/document.ts";
import { adminToken, call, newTenant } from "./helpers.ts";

// What a client generated from /openapi.json (openapi-typescript + openapi-fetch, test/e2e/
// openapi-client.e2e.test.ts) needs of the document: a schema for every answer with a body, the
// headers every answer carries, the error body's `requestId`, JSON objects typed as open records,
// and query bounds that are the ones the live routes enforce.

let doc: OpenApiDocument;
let key = "";

beforeAll(async () => {
  doc = await (await call("/openapi.json")).json<OpenApiDocument>();
  key = (await newTenant("oac")).key;
});

function operations(): { label: string; path: string; method: string; operation: OpenApiOperation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ label: `${method.toUpperCase()} ${path}`, path, method, operation })),
  );
}

const queryParameters = (operation: OpenApiOperation, name: string): OpenApiParameter[] =>
  operation.parameters.filter((parameter): parameter is OpenApiParameter => !("$ref" in parameter) && parameter.in === "query" && parameter.name === name);

/** A request to the operation's path (absent ids: the route answers 404 once the query is valid). */
function request(path: string, method: string, query: string): Promise<Response> {
  const url = path.replace(/\{(\w+)\}/g, (_, name: string) => (name === "tenantId" ? "t_absent" : "absent")) + query;
  return call(url, { method: method.toUpperCase(), token: path.startsWith("/v1/admin") ? adminToken() : key });
}

async function code(response: Response): Promise<string> {
  const body = await response.json<{ error?: { code?: string } }>();
  return body.error?.code ?? String(response.status);
}

describe("the OpenAPI document is complete enough for generated clients", () => {
  it("gives every success answer with a body its JSON Schema", () => {
    const missing: string[] = [];
    let answers = 0;
    for (const { label, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (!/^[123]/.test(status) || !response.content) continue;
        answers++;
        for (const [media, { schema }] of Object.entries(response.content)) if (!schema) missing.push(`${label} ${status} ${media}`);
      }
    }
    expect(missing).toEqual([]);
    expect(answers).toBeGreaterThan(60);
  });

  it("documents X-Request-Id on every answer, and Idempotency-Replayed on the successes of routes that take an Idempotency-Key", () => {
    expect(Object.keys(doc.components.headers).sort()).toEqual(["IdempotencyReplayed", "RequestId", "RetryAfter"]);
    for (const { label, operation } of operations()) {
      const idempotent = operation.parameters.some((parameter) => "$ref" in parameter && parameter.$ref.endsWith("/IdempotencyKey"));
      for (const [status, response] of Object.entries(operation.responses)) {
        if (status === "101") continue;
        const what = `${label} ${status}`;
        expect(response.headers?.["X-Request-Id"], what).toEqual({ $ref: "#/components/headers/RequestId" });
        const replayed = idempotent && status.startsWith("2") ? { $ref: "#/components/headers/IdempotencyReplayed" } : undefined;
        expect(response.headers?.["Idempotency-Replayed"], what).toEqual(replayed);
      }
    }
  });

  it("marks the error body's requestId required", () => {
    const error = JSON.stringify(doc.components.schemas.ErrorResponse);
    expect(doc.components.schemas.ErrorResponse).toMatchObject({ required: ["error"] });
    expect(error).toContain('"required":["requestId"]');
  });

  it("types JSON objects (tool parameters, tool-call arguments) as open records", () => {
    expect(doc.components.schemas.JsonObject).toMatchObject({ type: "object", additionalProperties: true });
    const toolView = JSON.stringify(doc.components.schemas.ToolDefinitionView);
    expect(toolView).toContain('"parameters":{"$ref":"#/components/schemas/JsonObject"}');
    const toolCall = JSON.stringify(doc.components.schemas.AgentMessage);
    expect(toolCall).toContain('"arguments":{"$ref":"#/components/schemas/JsonObject"}');
    const putTool = doc.paths["/v1/sessions/{sid}/tools/{name}"]?.put?.requestBody?.content["application/json"]?.schema;
    expect(JSON.stringify(putTool)).toContain('"parameters":{"type":"object","additionalProperties":true');
  });

  it("documents `limit` as an integer from 1 to 1000 (default 50) wherever it is taken, as the live routes enforce it", async () => {
    const listings = operations().filter(({ operation }) => queryParameters(operation, "limit").length > 0);
    expect(listings.length).toBeGreaterThanOrEqual(10);
    for (const { label, path, method, operation } of listings) {
      expect(queryParameters(operation, "limit")[0]?.schema, label).toMatchObject({ type: "integer", minimum: 1, maximum: 1000, default: 50 });
      for (const refused of ["0", "1001", "2.5", "-1"]) expect(await code(await request(path, method, `?limit=${refused}`)), `${label} limit=${refused}`).toBe("ValidationFailed");
      for (const accepted of ["1", "1000"]) expect(await code(await request(path, method, `?limit=${accepted}`)), `${label} limit=${accepted}`).not.toBe("ValidationFailed");
    }
  });

  it("documents `wait` as at most 60 seconds wherever it is taken, as the live routes enforce it", async () => {
    const waiting = operations().filter(({ operation }) => queryParameters(operation, "wait").length > 0);
    expect(waiting.map(({ label }) => label).sort()).toEqual([
      "GET /v1/sessions/{sid}/lanes/{lane}/operations/{opId}",
      "POST /v1/sessions/{sid}/lanes/{lane}/abort",
      "POST /v1/sessions/{sid}/lanes/{lane}/operations/{opId}/resume",
      "POST /v1/sessions/{sid}/lanes/{lane}/resume",
    ]);
    for (const { label, path, method, operation } of waiting) {
      expect(queryParameters(operation, "wait")[0]?.schema, label).toMatchObject({ type: "number", minimum: 0, maximum: 60 });
      for (const refused of ["60.5", "61", "-1"]) expect(await code(await request(path, method, `?wait=${refused}`)), `${label} wait=${refused}`).toBe("ValidationFailed");
      for (const accepted of ["0", "0.25", "60"]) expect(await code(await request(path, method, `?wait=${accepted}`)), `${label} wait=${accepted}`).not.toBe("ValidationFailed");
    }
  });
});
