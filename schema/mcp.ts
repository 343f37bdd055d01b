import * as v from "valibot";
import { isKeyedObject } from "./json.ts";
import { MAX_TOOL_URL_CHARS, ToolDefinitionViewSchema, ToolReplaySchema } from "./tools.ts";
import { utf8Length } from "./utf8.ts";

// MCP tool servers of a session (spec/API.md "Sessions": `…/mcp-servers/{name}`; the fourth tool
// kind of ARCHITECTURE D11). A tenant registers a remote Model Context Protocol server (streamable
// HTTP); its tools, discovered with `tools/list` and cached in the session, join the session's
// tools under a prefix, and each call is one `tools/call`.

/** Servers one session may register. */
export const MAX_SESSION_MCP_SERVERS = 8;
/** Tools one server may contribute (after the allow-list). */
export const MAX_MCP_SERVER_TOOLS = 64;
export const MAX_MCP_HEADERS = 16;
export const MAX_MCP_HEADER_VALUE_CHARS = 4096;
/** All static headers together (names and values), as UTF-8. */
export const MAX_MCP_HEADERS_BYTES = 8 * 1024;
export const MAX_MCP_PREFIX_CHARS = 32;
export const DEFAULT_MCP_TIMEOUT_MS = 30_000;
export const MAX_MCP_TIMEOUT_MS = 120_000;
/** A cached tool list older than this is refreshed in the background when a run uses it. */
export const MCP_DISCOVERY_TTL_MS = 60 * 60 * 1000;
/** A background discovery that failed is tried again after this long at the earliest. */
export const MCP_DISCOVERY_RETRY_MS = 5 * 60 * 1000;

export const McpServerNameSchema = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,32}$/, "An MCP server name is 1–32 letters, digits, _ or -"));

/** Header names the transport sets itself (or that would change its meaning), refused as static headers. */
const RESERVED_HEADERS = new Set(["host", "content-length", "content-type", "accept", "connection", "transfer-encoding", "mcp-session-id", "mcp-protocol-version", "last-event-id"]);

const HeaderNameSchema = v.pipe(
  v.string(),
  v.regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/, "A header name is 1–128 token characters"),
  v.check((name) => !RESERVED_HEADERS.has(name.toLowerCase()), "This header is set by the MCP transport and cannot be given"),
);
const HeaderValueSchema = v.pipe(
  v.string(),
  v.maxLength(MAX_MCP_HEADER_VALUE_CHARS),
  // Printable ASCII: fetch refuses a header value beyond Latin-1, and would only say so at call time.
  v.regex(/^[\t\x20-\x7e]*$/, "A header value is printable ASCII (spaces and tabs allowed)"),
);

/** The leading guard of McpHeadersSchema (valibot's record would take an array too); the OpenAPI document describes the whole by it. */
export const HeadersObjectSchema = v.custom<Record<string, string>>(
  isKeyedObject,
  "headers must be an object of header values by name (not __proto__, constructor or prototype)",
);

export const McpHeadersSchema = v.pipe(
  HeadersObjectSchema,
  v.record(HeaderNameSchema, HeaderValueSchema),
  v.check((headers) => Object.keys(headers).length <= MAX_MCP_HEADERS, `At most ${MAX_MCP_HEADERS} headers`),
  v.check(
    (headers) => new Set(Object.keys(headers).map((name) => name.toLowerCase())).size === Object.keys(headers).length,
    "Each header may be given once (names are case-insensitive)",
  ),
  v.check(
    (headers) => Object.entries(headers).reduce((total, [name, value]) => total + utf8Length(name) + utf8Length(value), 0) <= MAX_MCP_HEADERS_BYTES,
    `The headers may be at most ${MAX_MCP_HEADERS_BYTES} bytes together`,
  ),
);

/** A tool name as an MCP server spells it (the protocol allows more than providers do; these are bounded). */
const RemoteToolNameSchema = v.pipe(v.string(), v.minLength(1), v.maxLength(128));

/** The leading guard of the per-tool replay map (as for the headers). */
export const ReplayMapObjectSchema = v.custom<Record<string, "never" | "safe">>(
  isKeyedObject,
  "replay must be \"never\", \"safe\" or an object of those by tool name (not __proto__, constructor or prototype)",
);

/** One policy for every tool of the server, or one per tool by its name on the server (the others "never"). */
export const McpReplaySchema = v.union([
  ToolReplaySchema,
  v.pipe(
    ReplayMapObjectSchema,
    v.record(RemoteToolNameSchema, ToolReplaySchema),
    v.check((map) => Object.keys(map).length <= MAX_MCP_SERVER_TOOLS, `replay may name at most ${MAX_MCP_SERVER_TOOLS} tools`),
  ),
]);
export type McpReplay = v.InferOutput<typeof McpReplaySchema>;

/** The body of `PUT …/mcp-servers/{name}`. */
export const McpServerInputSchema = v.pipe(
  v.strictObject({
    // A check rather than v.url(): the same rule (URL.canParse), documented by its message instead of a `format` keyword.
    url: v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_TOOL_URL_CHARS), v.check((url) => URL.canParse(url), "url must be an absolute URL")),
    headers: v.optional(McpHeadersSchema),
    bearerToken: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_MCP_HEADER_VALUE_CHARS), v.regex(/^[\x21-\x7e]+$/, "bearerToken must be printable ASCII without spaces"))),
    /** Put before each tool's name; default `{name}_`. */
    prefix: v.optional(v.pipe(v.string(), v.regex(new RegExp(`^[A-Za-z0-9_-]{0,${MAX_MCP_PREFIX_CHARS}}$`), `prefix is at most ${MAX_MCP_PREFIX_CHARS} letters, digits, _ or -`))),
    /** Only these tools (names on the server) are offered; without it, every tool. */
    allow: v.optional(v.pipe(v.array(RemoteToolNameSchema), v.minLength(1), v.maxLength(MAX_MCP_SERVER_TOOLS))),
    replay: v.optional(McpReplaySchema),
    timeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(MAX_MCP_TIMEOUT_MS))),
  }),
  v.check(
    (input) => input.bearerToken === undefined || !Object.keys(input.headers ?? {}).some((name) => name.toLowerCase() === "authorization"),
    "Give either bearerToken or an Authorization header, not both",
  ),
);
export type McpServerInput = v.InferOutput<typeof McpServerInputSchema>;

export const McpServerStatusSchema = v.picklist(["ready", "error"]);
export type McpServerStatus = v.InferOutput<typeof McpServerStatusSchema>;

/** A tool the server offers, as the session lists it. */
export const McpToolViewSchema = v.object({
  /** The tool's name in this session (prefix + its name on the server). */
  name: v.string(),
  /** Its name on the server. */
  remoteName: v.string(),
  replay: ToolReplaySchema,
  /** The server stopped listing it; it stays while a lane has it active, and calling it fails. */
  withdrawn: v.optional(v.literal(true)),
});
export type McpToolView = v.InferOutput<typeof McpToolViewSchema>;

/** Why the last discovery failed, and when. */
const McpLastErrorSchema = v.object({ message: v.string(), at: v.string() });

/** A server's state as `GET …/tools` reports it next to the tools. */
export const McpServerSummarySchema = v.object({
  name: v.string(),
  /** `ready` when the last discovery succeeded, `error` when it failed (the cached tools stay usable). */
  status: McpServerStatusSchema,
  toolCount: v.number(),
  /** When discovery last succeeded (ISO 8601). */
  lastRefreshAt: v.optional(v.string()),
  lastError: v.optional(McpLastErrorSchema),
});
export type McpServerSummary = v.InferOutput<typeof McpServerSummarySchema>;

/** A registered server as the API shows it (header values and the bearer token never appear). */
export const McpServerViewSchema = v.object({
  ...McpServerSummarySchema.entries,
  url: v.string(),
  prefix: v.string(),
  allow: v.optional(v.array(v.string())),
  replay: McpReplaySchema,
  timeoutMs: v.number(),
  /** The names of the static headers (never their values); `Authorization` when a bearer token is set. */
  headerNames: v.array(v.string()),
  tools: v.array(McpToolViewSchema),
  /** Tools the server offers that this session cannot use, with why (a name or schema it cannot take, a name already taken). */
  skippedTools: v.array(v.object({ name: v.string(), reason: v.string() })),
});
export type McpServerView = v.InferOutput<typeof McpServerViewSchema>;

/** What `PUT …/mcp-servers/{name}` answers. */
export type McpServerReply = McpServerView & { created: boolean };

/** `GET …/mcp-servers`. */
export const McpServerListSchema = v.object({ items: v.array(McpServerViewSchema) });

/** What `GET …/tools` answers: the session's tools (its own and its MCP servers'), and each server's state. */
export const ToolListingSchema = v.object({ items: v.array(ToolDefinitionViewSchema), mcpServers: v.array(McpServerSummarySchema) });
export type ToolListing = v.InferOutput<typeof ToolListingSchema>;
