import { IdSchema } from "../../schema/api.ts";
import { LaneNameSchema } from "../../schema/lane-api.ts";
import { ToolResultAcceptedSchema } from "../../schema/lane-answers.ts";
import { ToolListingSchema } from "../../schema/mcp.ts";
import {
  ClientToolResultSchema,
  CreatedToolDefinitionSchema,
  MAX_SESSION_TOOLS,
  ToolCallIdSchema,
  ToolDefinitionInputSchema,
  ToolDefinitionViewSchema,
  ToolNameSchema,
} from "../../schema/tools.ts";
import { LANE_ERRORS, SESSION_ERRORS, type CatalogRoute } from "./catalog-types.ts";

// spec/API.md tools routes: worker/routes/tools.ts and the tool-results route of operations.ts
// (docs/tools.md).

const SID = { sid: IdSchema };
const TOOL = { ...SID, name: ToolNameSchema };
const DEFINITION =
  "`{ name, kind, description, parameters, replay, url?, timeoutMs?, secretHint?, server? }` (an http tool's secret never appears; `server` names an mcp tool's MCP server)";

export const toolCatalog: readonly CatalogRoute[] = [
  {
    method: "get", path: "/v1/sessions/{sid}/tools", operationId: "listTools", tag: "Tools", auth: "tenant",
    summary: "The session's tools: its definitions and its MCP servers' tools", description: `At most ${MAX_SESSION_TOOLS} definitions, by name, then the tools of its MCP servers (kind \`mcp\`, from their cached tool lists).`,
    pathParams: SID,
    responses: { 200: { description: `\`{ items: Definition[], mcpServers: [{ name, status, toolCount, lastRefreshAt?, lastError? }] }\`, each definition ${DEFINITION}`, schema: ToolListingSchema } },
    errors: [...SESSION_ERRORS],
  },
  {
    method: "put", path: "/v1/sessions/{sid}/tools/{name}", operationId: "putTool", tag: "Tools", auth: "tenant",
    summary: "Define or replace a tool (builtin, http webhook, or client-executed)",
    description:
      "A `builtin` tool's name picks one of the service's tools (current_time, values_get, values_set, values_list, wait, fail). " +
      "`parameters` must be an object JSON Schema. An http tool's `url` must be https. Creating an http tool answers its signing secret once (`secret`); replacing it keeps the secret.",
    pathParams: TOOL, body: ToolDefinitionInputSchema,
    example: { kind: "client", description: "Asks the user to approve", parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] } },
    responses: {
      200: { description: `Replaced: ${DEFINITION}`, schema: ToolDefinitionViewSchema },
      201: { description: `Created: ${DEFINITION}, plus \`secret\` for an http tool`, schema: CreatedToolDefinitionSchema },
    },
    errors: [...SESSION_ERRORS, "UnknownTool", "LimitExceeded"],
  },
  {
    method: "delete", path: "/v1/sessions/{sid}/tools/{name}", operationId: "deleteTool", tag: "Tools", auth: "tenant",
    summary: "Remove a tool definition", description: "409 `ToolInUse` while a lane has it in `activeTools`.",
    pathParams: TOOL,
    responses: { 204: { description: "Removed", content: "none" } },
    errors: [...SESSION_ERRORS, "ToolNotFound", "ToolInUse"],
  },
  {
    method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/operations/{opId}/tool-results/{toolCallId}", operationId: "postToolResult", tag: "Tools", auth: "tenant",
    summary: "Answer a client tool call",
    description:
      "Accepted once per call; a second post, or one after the tool's `timeoutMs` ran out (`details.timedOut: true`), is 409 (`ToolResultConflict`, or `OperationMismatch` once the run moved on).",
    pathParams: { ...SID, lane: LaneNameSchema, opId: IdSchema, toolCallId: ToolCallIdSchema },
    body: ClientToolResultSchema, example: { content: [{ type: "text", text: "Approved" }] },
    responses: { 202: { description: "`{ accepted: true }`", schema: ToolResultAcceptedSchema } },
    errors: [...LANE_ERRORS, "OperationMismatch", "UnknownToolCall", "ToolResultConflict"],
  },
];
