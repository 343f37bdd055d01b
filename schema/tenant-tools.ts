import * as v from "valibot";
import { McpServerViewSchema } from "./mcp.ts";
import { ClientToolInputSchema, HttpToolInputSchema, ToolDefinitionViewSchema } from "./tools.ts";

// Tenant tools and MCP servers (spec/API.md "Tenant tools and MCP servers"): one definition and one
// signing secret for every session made from the tenant's agents. Each PUT makes a new immutable
// revision; an agent version pins the revision current when it was made, and a session made from
// it holds a sealed copy of that revision. Definitions have the shapes the session routes take.

/** Live (not deleted) tenant tools one tenant may hold. */
export const MAX_TENANT_TOOLS = 256;
/** Live tenant MCP servers one tenant may hold. */
export const MAX_TENANT_MCP_SERVERS = 32;
/**
 * Names (of tools, and of MCP servers) one tenant may ever create: a deleted name keeps its
 * revisions (an older agent version may still pin one), so deletions do not make room.
 */
export const MAX_TENANT_TOOL_NAMES = 1000;
/** Revisions one tenant tool or MCP server may have over its life (a deleted name that is created again counts on). */
export const MAX_TENANT_TOOL_REVISIONS = 1000;
/** Tenant tool and MCP server listings end a page before it would pass this many bytes of JSON (at least one item). */
export const TENANT_TOOL_PAGE_BYTES_MAX = 4 * 1024 * 1024;

/**
 * The body of `PUT /v1/tools/{name}`: an http or a client tool, as `PUT …/tools/{name}` of a
 * session takes it. A builtin tool needs no tenant definition (an agent names it as
 * `{ "kind": "builtin" }` directly), so it is refused here.
 */
export const TenantToolInputSchema = v.variant(
  "kind",
  [HttpToolInputSchema, ClientToolInputSchema],
  'A tenant tool is kind "http" or "client"; an agent names a builtin tool directly, as { "kind": "builtin" } in its tools',
);
export type TenantToolInput = v.InferOutput<typeof TenantToolInputSchema>;

/** Which revision, and when: on every tenant tool and MCP server the API shows. */
const revisionEntries = {
  /** 1 for the first PUT, one more for each later PUT (and for each refresh that changed the tools). */
  revision: v.number(),
  /** When this name was created (or created again after a delete), milliseconds since the epoch. */
  createdAt: v.number(),
  /** When the revision shown was made. */
  updatedAt: v.number(),
};

/** A tenant tool as the API shows it (its latest revision; the secret never appears, `secretHint` tells secrets apart). */
export const TenantToolViewSchema = v.object({ ...ToolDefinitionViewSchema.entries, ...revisionEntries });
export type TenantToolView = v.InferOutput<typeof TenantToolViewSchema>;

/** What `PUT /v1/tools/{name}` answers: with `secret` when this revision got a new one (shown this once). */
export const PutTenantToolReplySchema = v.object({ ...TenantToolViewSchema.entries, secret: v.optional(v.string()) });
export type TenantToolReply = v.InferOutput<typeof PutTenantToolReplySchema> & { created: boolean };

/** A tenant MCP server as the API shows it (its latest revision; header values never appear). */
export const TenantMcpServerViewSchema = v.object({ ...McpServerViewSchema.entries, ...revisionEntries });
export type TenantMcpServerView = v.InferOutput<typeof TenantMcpServerViewSchema>;
export type TenantMcpServerReply = TenantMcpServerView & { created: boolean };
