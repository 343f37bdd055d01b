import { MAX_SESSION_TOOLS, ToolDefinitionInputSchema, ToolDefinitionsObjectSchema, ToolNameSchema } from "../../schema/tools.ts";
import { AgentToolSchema, AgentToolsObjectSchema, ResourcePatchesObjectSchema, ResourcePatchSchema, ToolPatchesObjectSchema, ToolPatchSchema } from "../../schema/agents.ts";
import { ResourceNameSchema } from "../../schema/api.ts";
import { PromptTemplateSchema, PromptTemplatesObjectSchema, SkillSchema, SkillsObjectSchema } from "../../schema/settings.ts";
import { toJsonSchema, toJsonSchemaDefs, type ConversionConfig, type JsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import { ERROR_STATUS, type ErrorCode } from "../../schema/errors.ts";
import { IDEMPOTENCY_REPLAY_MAX_BYTES } from "../../durable-objects/rpc/idempotency.ts";
import { IDEMPOTENCY_KEY } from "../middleware/idempotency.ts";
import { TOKEN_ROUTES } from "../middleware/token-scopes.ts";
import { CATALOG } from "./catalog.ts";
import { TAGS, type Auth, type CatalogRoute, type Method } from "./catalog-types.ts";
import { COMPONENTS, EXPLICIT, HEADERS, type OpenApiHeader } from "./components.ts";

// Builds the OpenAPI 3.1 document from the route catalog with @valibot/to-json-schema: the JSON
// Schemas are generated from the same valibot objects the routes validate with (and answer with:
// the answers' types are inferred from those schemas). Schemas are converted in "input" mode (what
// a client sends; answers have no transforms or defaults, so both modes agree on them).

export type JsonSchemaWithExtensions = JsonSchema & { "x-status-by-code"?: Record<string, number> };
export interface OpenApiParameter {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  description?: string;
  schema: JsonSchema;
}
export interface OpenApiMediaType {
  schema?: JsonSchema;
  example?: unknown;
}
export interface OpenApiResponse {
  description: string;
  content?: Record<string, OpenApiMediaType>;
  headers?: Record<string, { $ref: string }>;
  "x-error-codes"?: ErrorCode[];
}
export interface OpenApiOperation {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security: Record<string, string[]>[];
  "x-auth": Auth;
  parameters: (OpenApiParameter | { $ref: string })[];
  requestBody?: { required: boolean; content: Record<string, OpenApiMediaType> };
  responses: Record<string, OpenApiResponse>;
}
export interface OpenApiDocument {
  openapi: "3.1.0";
  info: { title: string; version: string; description: string };
  servers: { url: string; description: string }[];
  tags: { name: string; description: string }[];
  paths: Record<string, Partial<Record<Method, OpenApiOperation>>>;
  components: {
    schemas: Record<string, JsonSchemaWithExtensions>;
    parameters: Record<string, OpenApiParameter>;
    headers: Record<string, OpenApiHeader>;
    securitySchemes: Record<string, { type: "http"; scheme: "bearer"; description: string }>;
  };
}

const BASE_CONFIG = {
  target: "draft-2020-12",
  typeMode: "input",
  errorMode: "throw",
  overrideRef: ({ referenceId }) => `#/components/schemas/${referenceId}`,
  overrideSchema: ({ valibotSchema }) => EXPLICIT.get(valibotSchema) ?? MAPS_BY_NAME.get(valibotSchema)?.(),
  overrideAction: ({ valibotAction, jsonSchema }) => {
    // JSON numbers are finite anyway; a `check` predicate is documented by its message.
    if (valibotAction.type === "finite") return jsonSchema;
    if (valibotAction.type !== "check") return undefined;
    const message: unknown = "message" in valibotAction ? valibotAction.message : undefined;
    if (typeof message !== "string") return jsonSchema;
    return { ...jsonSchema, description: jsonSchema.description ? `${jsonSchema.description} ${message}.` : `${message}.` };
  },
} satisfies Omit<ConversionConfig, "definitions">;
const CONFIG: ConversionConfig = { ...BASE_CONFIG, definitions: COMPONENTS };

/** The maps by name, described by their leading `v.custom` guards (json.ts isKeyedObject), which have no JSON Schema. */
const MAPS_BY_NAME = new Map<unknown, () => JsonSchema>([
  [ToolDefinitionsObjectSchema, () => toolsByName(ToolDefinitionInputSchema, "Tool definitions by name")],
  [AgentToolsObjectSchema, () => toolsByName(AgentToolSchema, 'Tool definitions, or tenant tools as { kind: "tenant", tool }, by name')],
  [ToolPatchesObjectSchema, () => byName(ToolNameSchema, v.nullable(ToolPatchSchema), "Tool patches by name (null removes the tool)")],
  [SkillsObjectSchema, () => byName(ResourceNameSchema, SkillSchema, "Skills by name")],
  [PromptTemplatesObjectSchema, () => byName(ResourceNameSchema, PromptTemplateSchema, "Prompt templates by name")],
  [ResourcePatchesObjectSchema, () => byName(ResourceNameSchema, v.nullable(ResourcePatchSchema), "Patches by name (null removes one)")],
]);

/** The JSON Schema of a map by name, given to its leading `v.custom` guard (json.ts isKeyedObject), which has none. */
function byName(name: v.GenericSchema, item: v.GenericSchema, what: string): JsonSchema {
  // Converted without the component definitions: these maps sit inside components themselves.
  const inline = (schema: v.GenericSchema): JsonSchema => {
    const json = toJsonSchema(schema, BASE_CONFIG);
    delete json.$schema;
    return json;
  };
  return { type: "object", propertyNames: inline(name), additionalProperties: inline(item), description: `${what} (not __proto__, constructor or prototype).` };
}

/** The JSON Schema of a tools-by-name record (a session's, an agent's), given to its leading `v.custom` guard (an object, not an array), which has none. */
function toolsByName(tool: v.GenericSchema, what: string): JsonSchema {
  return {
    type: "object",
    propertyNames: jsonSchemaOf(ToolNameSchema),
    additionalProperties: jsonSchemaOf(tool),
    description: `${what}, at most ${MAX_SESSION_TOOLS}.`,
  };
}

/** Conversions by schema object: a schema used by many routes (ids, `?wait=`) is converted once. */
const converted = new WeakMap<v.GenericSchema, JsonSchema>();

/** One valibot schema as an embeddable JSON Schema (shared shapes as component references). */
export function jsonSchemaOf(schema: v.GenericSchema): JsonSchema {
  const known = converted.get(schema);
  if (known) return known;
  const json = toJsonSchema(schema, CONFIG);
  delete json.$schema;
  delete json.$defs;
  converted.set(schema, json);
  return json;
}

const isOptional = (schema: v.GenericSchema): boolean => schema.type === "optional" || schema.type === "exact_optional" || schema.type === "nullish";
const SECURITY: Record<Auth, Record<string, string[]>[]> = { tenant: [{ tenantKey: [] }], admin: [{ adminToken: [] }], none: [] };

/** A route's security: a browser token with the scope it needs is an alternative to the key on the routes tokens may call. */
function security(route: CatalogRoute): Record<string, string[]>[] {
  const token = TOKEN_ROUTES.find((entry) => entry.method === route.method && entry.path === route.path);
  return token ? [...SECURITY[route.auth], { browserToken: [token.scope] }] : SECURITY[route.auth];
}
const MEDIA = { json: "application/json", html: "text/html", sse: "text/event-stream", ndjson: "application/x-ndjson" } as const;

function parameters(route: CatalogRoute): OpenApiOperation["parameters"] {
  const path = Object.entries(route.pathParams ?? {}).map(([name, schema]): OpenApiParameter => ({ name, in: "path", required: true, schema: jsonSchemaOf(schema) }));
  const query = Object.entries(route.query?.entries ?? {}).map(([name, schema]): OpenApiParameter => ({ name, in: "query", required: !isOptional(schema), schema: jsonSchemaOf(schema) }));
  const patterns = (route.queryPatterns ?? []).map(({ name, description, schema }): OpenApiParameter => ({ name, in: "query", required: false, description, schema: jsonSchemaOf(schema) }));
  return [...path, ...query, ...patterns, ...(route.idempotent ? [{ $ref: "#/components/parameters/IdempotencyKey" }] : [])];
}

/** The route's error codes, its shape's implied ones included, by HTTP status. */
function errorCodesByStatus(route: CatalogRoute): Map<number, ErrorCode[]> {
  const implied: ErrorCode[] = [
    ...(route.auth === "none" ? [] : (["Unauthenticated"] as const)),
    // Any tenant route refuses a browser token that does not reach it (worker/middleware/token-scopes.ts).
    ...(route.auth === "tenant" ? (["TokenScope"] as const) : []),
    ...(route.pathParams || route.query || route.queryPatterns || route.body || route.idempotent ? (["ValidationFailed"] as const) : []),
    ...(route.body ? (["PayloadTooLarge"] as const) : []),
    ...(route.idempotent ? (["IdempotencyInProgress", "IdempotencyConflict", "IdempotencyReplayTooLarge"] as const) : []),
    // Every authenticated route reaches a Durable Object, which may be overloaded or reset.
    ...(route.auth === "none" ? [] : (["Overloaded"] as const)),
    // A deployment without a long enough ADMIN_TOKEN serves no admin route (worker/middleware/auth.ts).
    ...(route.auth === "admin" ? (["NotConfigured"] as const) : []),
    // Quotas answer 429 on tenant routes; every route documents it, so clients handle it everywhere.
    "RateLimited",
    "Internal",
  ];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set([...implied, ...route.errors])) {
    const status = route.errorStatus?.[code] ?? ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return byStatus;
}

const header = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });

function responses(route: CatalogRoute): Record<string, OpenApiResponse> {
  const answers: Record<string, OpenApiResponse> = {};
  for (const [status, { description, schema, content = "json" }] of Object.entries(route.responses)) {
    answers[status] = {
      description,
      ...(content !== "none" && { content: { [MEDIA[content]]: schema ? { schema: jsonSchemaOf(schema) } : {} } }),
      // A WebSocket upgrade's 101 is the platform's answer: it carries no headers of the API's.
      ...(status !== "101" && { headers: { "X-Request-Id": header("RequestId"), ...(route.idempotent && { "Idempotency-Replayed": header("IdempotencyReplayed") }) } }),
    };
  }
  for (const [status, codes] of [...errorCodesByStatus(route)].sort(([a], [b]) => a - b)) {
    const schema: JsonSchema = { $ref: "#/components/schemas/ErrorResponse", properties: { error: { properties: { code: { enum: codes } } } } };
    answers[String(status)] = {
      description: codes.map((code) => `\`${code}\``).join(", "),
      content: { [MEDIA.json]: { schema } },
      "x-error-codes": codes,
      headers: { "X-Request-Id": header("RequestId"), ...((status === 429 || status === 503) && { "Retry-After": header("RetryAfter") }) },
    };
  }
  return answers;
}

function operation(route: CatalogRoute): OpenApiOperation {
  const { body } = route;
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description && { description: route.description }),
    tags: [route.tag],
    security: security(route),
    "x-auth": route.auth,
    parameters: parameters(route),
    ...(body && {
      requestBody: {
        required: !isOptional(body),
        content: { [MEDIA.json]: { schema: jsonSchemaOf(body), ...(route.example !== undefined && { example: route.example }) } },
      },
    }),
    // A JSON Lines body: the schema is one line's (each line is validated as it arrives).
    ...(route.lines && { requestBody: { required: true, content: { [MEDIA.ndjson]: { schema: jsonSchemaOf(route.lines) } } } }),
    responses: responses(route),
  };
}

export function buildOpenApiDocument(catalog: readonly CatalogRoute[] = CATALOG): OpenApiDocument {
  const paths: OpenApiDocument["paths"] = {};
  for (const route of catalog) paths[route.path] = { ...paths[route.path], [route.method]: operation(route) };
  const schemas: Record<string, JsonSchemaWithExtensions> = toJsonSchemaDefs(COMPONENTS, BASE_CONFIG);
  schemas.ApiError = { ...schemas.ApiError, "x-status-by-code": { ...ERROR_STATUS } };
  return {
    openapi: "3.1.0",
    info: {
      title: "Durable Agent Sessions API",
      // The API's version, as in its base path `/v1`.
      version: "1",
      description:
        "A durable agent-session runtime: JSON over HTTPS, base path `/v1`, `Authorization: Bearer <key>`. Errors are " +
        "`{ \"error\": { code, message, details?, requestId } }` with the code's status (`ApiError`). Creating POSTs accept `Idempotency-Key`.",
    },
    // Relative: the deployment (or `npm start`) serving this document, whatever its host.
    servers: [{ url: "/", description: "The server that serves this document" }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      schemas,
      parameters: {
        IdempotencyKey: {
          name: "Idempotency-Key",
          in: "header",
          required: false,
          description:
            "Scoped to the tenant and the route (method and path). The same key and body replay the remembered success (`Idempotency-Replayed: true`); another body is 422, a concurrent duplicate 409 `IdempotencyInProgress` with `Retry-After`. Only successes are remembered: a refused request (4xx) or a failed one (5xx) may be retried with the same key. " +
            `A success whose answer exceeds ${IDEMPOTENCY_REPLAY_MAX_BYTES / (1024 * 1024)} MiB is not replayed: a repeat is 409 \`IdempotencyReplayTooLarge\` naming what it created in \`details\` (the request is not run again). The request is validated before the key is claimed.`,
          schema: { type: "string", pattern: IDEMPOTENCY_KEY.source },
        },
      },
      headers: HEADERS,
      securitySchemes: {
        tenantKey: { type: "http", scheme: "bearer", description: "A tenant API key `sk_<tenantId>_<random>`; WebSocket routes also accept the subprotocol `bearer.<key>`." },
        adminToken: { type: "http", scheme: "bearer", description: "The deployment's admin token (the `ADMIN_TOKEN` secret)." },
        browserToken: {
          type: "http",
          scheme: "bearer",
          description:
            "A browser token `bt_…` (`POST /v1/sessions/{sid}/tokens`): one session, optionally some lanes, the scopes listed per route (`watch`, `prompt`). Also accepted as the subprotocol `bearer.<token>` and, on GET routes, as `?access_token=<token>`. Anything else is 403 `TokenScope`.",
        },
      },
    },
  };
}

let cached: OpenApiDocument | undefined;

/** The document, built once per isolate. */
export function openApiDocument(): OpenApiDocument {
  cached ??= buildOpenApiDocument();
  return cached;
}
