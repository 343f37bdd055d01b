import * as v from "valibot";
import { isKeyedObject, JsonObjectSchema, JsonValueSchema, RECORD_SKIPPED_KEYS, type JsonObject } from "./json.ts";
import { ImageContentSchema, TextContentSchema } from "./messages.ts";
import { utf8Length } from "./utf8.ts";

// Tool definitions as session data (spec/API.md "Sessions": `…/tools/{name}`; ARCHITECTURE D11).
// Three kinds: `builtin` (the name picks one of the service's own tools), `http` (the tenant's
// webhook) and `client` (the tenant's client answers the call over REST).

/** Provider tool-name rules (the strictest of the major APIs): letters, digits, `_` and `-`. */
export const ToolNameSchema = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9_-]{1,64}$/, "A tool name is 1–64 letters, digits, _ or -"),
  // A map of tools by name could not hold these (json.ts RECORD_SKIPPED_KEYS).
  v.check((name) => !RECORD_SKIPPED_KEYS.includes(name), "A tool name is not __proto__, constructor or prototype"),
);

/** Tools one session may define. */
export const MAX_SESSION_TOOLS = 64;
export const MAX_TOOL_DESCRIPTION_CHARS = 4096;
/** The JSON text of a parameters schema. */
export const MAX_TOOL_PARAMETERS_BYTES = 16 * 1024;
export const MAX_TOOL_URL_CHARS = 2048;
export const DEFAULT_HTTP_TOOL_TIMEOUT_MS = 10_000;
export const MAX_HTTP_TOOL_TIMEOUT_MS = 60_000;
/** A client call may wait this long at most when a timeout is given (a day). */
export const MAX_CLIENT_TOOL_TIMEOUT_MS = 24 * 60 * 60 * 1000;
/** A posted client result, as JSON text. */
export const MAX_TOOL_RESULT_BYTES = 256 * 1024;

const description = v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_TOOL_DESCRIPTION_CHARS));

/** An object schema for the arguments, bounded in size (that it is a usable JSON Schema is checked where it is compiled). */
export const ToolParametersSchema = v.custom<JsonObject>(
  (input) => v.is(JsonObjectSchema, input) && input.type === "object" && utf8Length(JSON.stringify(input)) <= MAX_TOOL_PARAMETERS_BYTES,
  `parameters must be a JSON Schema object with "type": "object", at most ${MAX_TOOL_PARAMETERS_BYTES} bytes of JSON`,
);

export const ToolReplaySchema = v.picklist(["never", "safe"]);

export const BuiltinToolInputSchema = v.strictObject({
  kind: v.literal("builtin"),
  description: v.optional(description),
});
export const HttpToolInputSchema = v.strictObject({
  kind: v.literal("http"),
  description,
  parameters: ToolParametersSchema,
  url: v.pipe(v.string(), v.maxLength(MAX_TOOL_URL_CHARS), v.url("url must be an absolute URL")),
  timeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(MAX_HTTP_TOOL_TIMEOUT_MS))),
  replay: v.optional(ToolReplaySchema),
});
export const ClientToolInputSchema = v.strictObject({
  kind: v.literal("client"),
  description,
  parameters: ToolParametersSchema,
  timeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1000), v.maxValue(MAX_CLIENT_TOOL_TIMEOUT_MS))),
});

/** The body of `PUT …/tools/{name}`. */
export const ToolDefinitionInputSchema = v.variant("kind", [BuiltinToolInputSchema, HttpToolInputSchema, ClientToolInputSchema]);
export type ToolDefinitionInput = v.InferOutput<typeof ToolDefinitionInputSchema>;

/**
 * Tool definitions by name (`tools` when a session is created). A JSON object: valibot's record
 * would also take an array (its indexes are valid names) and turn it into an object, so the
 * input is checked first. (The OpenAPI document describes the whole by the leading guard.)
 */
export const ToolDefinitionsObjectSchema = v.custom<Record<string, ToolDefinitionInput>>(
  isKeyedObject,
  "tools must be an object of definitions by tool name (not __proto__, constructor or prototype)",
);
export const ToolDefinitionsByNameSchema = v.pipe(
  ToolDefinitionsObjectSchema,
  v.record(ToolNameSchema, ToolDefinitionInputSchema),
  v.check((tools) => Object.keys(tools).length <= MAX_SESSION_TOOLS, `A session may define at most ${MAX_SESSION_TOOLS} tools`),
);

/** A defined tool as the API shows it (an http tool's secret never appears); `mcp` tools come from a registered MCP server. */
export const ToolDefinitionViewSchema = v.object({
  name: v.string(),
  kind: v.picklist(["builtin", "http", "client", "mcp"]),
  description: v.string(),
  /** The JSON Schema of the tool's arguments. */
  parameters: JsonObjectSchema,
  replay: ToolReplaySchema,
  url: v.optional(v.string()),
  timeoutMs: v.optional(v.number()),
  /** The last characters of an http tool's signing secret, to tell secrets apart. */
  secretHint: v.optional(v.string()),
  /** An mcp tool's server (its name in `…/mcp-servers`). */
  server: v.optional(v.string()),
});
export type ToolDefinitionView = v.InferOutput<typeof ToolDefinitionViewSchema>;

/** What `PUT …/tools/{name}` answers when it created the tool: an http tool's signing secret, this once. */
export const CreatedToolDefinitionSchema = v.object({ ...ToolDefinitionViewSchema.entries, secret: v.optional(v.string()) });

/** What the session object answers `PUT …/tools/{name}` (the route answers `created` as 201 or 200). */
export type ToolDefinitionReply = v.InferOutput<typeof CreatedToolDefinitionSchema> & { created: boolean };

/** A tool call id as providers mint them (path segment of the tool-results route). */
export const ToolCallIdSchema = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_.:|-]{1,128}$/, "A tool call id is 1–128 letters, digits or _ . : | -"));

/** The body of `POST …/operations/{opId}/tool-results/{toolCallId}`. */
export const ClientToolResultSchema = v.pipe(
  v.strictObject({
    content: v.pipe(v.array(v.variant("type", [TextContentSchema, ImageContentSchema])), v.maxLength(64)),
    isError: v.optional(v.boolean()),
    details: v.optional(JsonValueSchema),
  }),
  v.check((result) => utf8Length(JSON.stringify(result)) <= MAX_TOOL_RESULT_BYTES, `A tool result may be at most ${MAX_TOOL_RESULT_BYTES} bytes of JSON`),
);
export type ClientToolResult = v.InferOutput<typeof ClientToolResultSchema>;

/**
 * Who is calling a tool, in every http tool request (inside the signed body, as `context`) and in
 * every MCP `tools/call` (in `_meta` under TOOL_CALL_CONTEXT_META_KEY): one endpoint serving many
 * sessions can attribute each call to its tenant, session, lane and end user (the session's
 * metadata) and tell a replayed call from a new one (`invocationId`).
 */
export const ToolCallContextSchema = v.object({
  tenantId: v.string(),
  sessionId: v.string(),
  lane: v.string(),
  operationId: v.string(),
  toolCallId: v.string(),
  invocationId: v.string(),
  /** The agent version the session is bound to, when it is bound to one. */
  agent: v.optional(v.object({ id: v.string(), version: v.number() })),
  /** The session's metadata (`{}` when it has none). */
  metadata: v.record(v.string(), v.string()),
});
export type ToolCallContext = v.InferOutput<typeof ToolCallContextSchema>;

/** The `_meta` key of an MCP `tools/call` that carries the call's ToolCallContext. */
export const TOOL_CALL_CONTEXT_META_KEY = "durable-agent-sessions/context";
