import { PageQuerySchema, pageSchema } from "../../schema/api.ts";
import { McpServerInputSchema, McpServerNameSchema } from "../../schema/mcp.ts";
import {
  MAX_TENANT_MCP_SERVERS,
  MAX_TENANT_TOOL_REVISIONS,
  MAX_TENANT_TOOLS,
  PutTenantToolReplySchema,
  TenantMcpServerViewSchema,
  TenantToolInputSchema,
  TenantToolViewSchema,
} from "../../schema/tenant-tools.ts";
import { ToolNameSchema } from "../../schema/tools.ts";
import type { CatalogRoute } from "./catalog-types.ts";

// Tenant tool and MCP server routes: worker/routes/tenant-tools.ts (docs/tools.md "Tenant tools").

const TOOL = { name: ToolNameSchema };
const SERVER = { name: McpServerNameSchema };
const REVISION = "`revision` (1, 2, …: each PUT makes the next), `createdAt`, `updatedAt` (when this revision was made)";
const TOOL_VIEW = `\`{ name, kind, description, parameters, replay, url?, timeoutMs?, secretHint?, ${REVISION.replace(/`/g, "")} }\` (the secret never appears)`;
const SERVER_VIEW = `a session MCP server's view (\`{ name, url, prefix, …, tools, skippedTools }\`, header values never appear) with ${REVISION}`;
const PAGES = "`limit` 1–1000, default 50; a page also ends before 4 MiB of JSON (with a `nextCursor`).";
const IN_USE = "409 `ToolInUse` (`details.agents`) while the latest version of a live agent names it; PATCH those agents not to name it, or delete them, first. Its revisions stay, so an older agent version that pinned one still gives sessions their copies; a PUT after the delete creates it afresh (a new secret, revision numbers continuing).";
const BOUNDS = `At most ${MAX_TENANT_TOOL_REVISIONS} revisions per name (422 \`LimitExceeded\`).`;

export const tenantToolCatalog: readonly CatalogRoute[] = [
  {
    method: "get", path: "/v1/tools", operationId: "listTenantTools", tag: "Tenant tools", auth: "tenant",
    summary: "The tenant's tools", description: `The latest revision of each tool (deleted ones are left out), in creation order. ${PAGES}`,
    query: PageQuerySchema,
    responses: { 200: { description: `A page of tools, each ${TOOL_VIEW}`, schema: pageSchema(TenantToolViewSchema) } },
    errors: [],
  },
  {
    method: "get", path: "/v1/tools/{name}", operationId: "getTenantTool", tag: "Tenant tools", auth: "tenant",
    summary: "A tenant tool's latest revision", pathParams: TOOL,
    responses: { 200: { description: TOOL_VIEW, schema: TenantToolViewSchema } },
    errors: ["ToolNotFound"],
  },
  {
    method: "put", path: "/v1/tools/{name}", operationId: "putTenantTool", tag: "Tenant tools", auth: "tenant",
    summary: "Create a tenant tool or make its next revision (http or client)",
    description:
      "The body a session's `PUT …/tools/{name}` takes, checked the same way (parameters must compile, an http tool's `url` must pass the egress policy: 400 `ValidationFailed`), but `http` or `client` only: an agent names a builtin tool directly. " +
      "The PUT that creates an http tool answers its signing secret once (`secret`); later revisions keep it (a revision that turns a client tool into an http tool answers a new one). Agent versions made afterwards pin the new revision; versions made before keep theirs. " +
      `A tenant holds at most ${MAX_TENANT_TOOLS} tools (422 \`LimitExceeded\`, \`details.resource: "tenant_tools"\`). ${BOUNDS} A PUT is idempotent by nature and takes no Idempotency-Key.`,
    pathParams: TOOL, body: TenantToolInputSchema,
    example: { kind: "client", description: "Asks the user to approve", parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] } },
    responses: {
      200: { description: `A new revision: ${TOOL_VIEW}`, schema: PutTenantToolReplySchema },
      201: { description: `Created: ${TOOL_VIEW}, plus \`secret\` for an http tool`, schema: PutTenantToolReplySchema },
    },
    errors: ["LimitExceeded"],
  },
  {
    method: "delete", path: "/v1/tools/{name}", operationId: "deleteTenantTool", tag: "Tenant tools", auth: "tenant",
    summary: "Delete a tenant tool", description: IN_USE, pathParams: TOOL,
    responses: { 204: { description: "Deleted", content: "none" } },
    errors: ["ToolNotFound", "ToolInUse"],
  },
  {
    method: "get", path: "/v1/mcp-servers", operationId: "listTenantMcpServers", tag: "Tenant tools", auth: "tenant",
    summary: "The tenant's MCP servers", description: `The latest revision of each server (deleted ones are left out), in creation order. ${PAGES}`,
    query: PageQuerySchema,
    responses: { 200: { description: `A page of servers, each ${SERVER_VIEW}`, schema: pageSchema(TenantMcpServerViewSchema) } },
    errors: [],
  },
  {
    method: "get", path: "/v1/mcp-servers/{name}", operationId: "getTenantMcpServer", tag: "Tenant tools", auth: "tenant",
    summary: "A tenant MCP server's latest revision", pathParams: SERVER,
    responses: { 200: { description: SERVER_VIEW, schema: TenantMcpServerViewSchema } },
    errors: ["McpServerNotFound"],
  },
  {
    method: "put", path: "/v1/mcp-servers/{name}", operationId: "putTenantMcpServer", tag: "Tenant tools", auth: "tenant",
    summary: "Register a tenant MCP server or make its next revision, and discover its tools",
    description:
      "The body a session's `PUT …/mcp-servers/{name}` takes, with the same rules: `url` must pass the egress policy, headers and `bearerToken` are stored encrypted and never answered, a discovery that fails still registers the server (`status: \"error\"`, `lastError`). " +
      `A revision's tool list is what agent versions pin, so it never changes afterwards. A tenant holds at most ${MAX_TENANT_MCP_SERVERS} servers (422 \`LimitExceeded\`, \`details.resource: "tenant_mcp_servers"\`). ${BOUNDS}`,
    pathParams: SERVER, body: McpServerInputSchema,
    example: { url: "https://mcp.example.com/mcp", bearerToken: "secret-token", prefix: "docs_", allow: ["search"] },
    responses: { 200: { description: `A new revision: ${SERVER_VIEW}`, schema: TenantMcpServerViewSchema }, 201: { description: `Registered: ${SERVER_VIEW}`, schema: TenantMcpServerViewSchema } },
    errors: ["LimitExceeded", "NotConfigured"],
  },
  {
    method: "delete", path: "/v1/mcp-servers/{name}", operationId: "deleteTenantMcpServer", tag: "Tenant tools", auth: "tenant",
    summary: "Delete a tenant MCP server", description: IN_USE, pathParams: SERVER,
    responses: { 204: { description: "Deleted", content: "none" } },
    errors: ["McpServerNotFound", "ToolInUse"],
  },
  {
    method: "post", path: "/v1/mcp-servers/{name}/refresh", operationId: "refreshTenantMcpServer", tag: "Tenant tools", auth: "tenant",
    summary: "Discover a tenant MCP server's tools again now",
    description: "A discovery that finds another tool list makes the next revision (agent versions made afterwards pin it); one that finds the same list, or fails (`status: \"error\"`, `lastError`, the cached tools kept), only updates the latest revision's status.",
    pathParams: SERVER,
    responses: { 200: { description: SERVER_VIEW, schema: TenantMcpServerViewSchema } },
    errors: ["McpServerNotFound", "LimitExceeded"],
  },
];
