import { PageQuerySchema, pageSchema } from "../../schema/api.ts";
import {
  AgentIdSchema,
  AgentSchema,
  AgentVersionParamSchema,
  CreateAgentSchema,
  MAX_AGENT_VERSION_BYTES,
  MAX_AGENT_VERSIONS,
  MAX_AGENTS,
  MAX_METADATA_KEY_CHARS,
  MAX_METADATA_KEYS,
  MAX_METADATA_VALUE_CHARS,
  PatchAgentSchema,
} from "../../schema/agents.ts";
import type { CatalogRoute } from "./catalog-types.ts";

// Agent routes: worker/routes/agents.ts (docs/agents.md).

const ID = { id: AgentIdSchema };
const AGENT = "`{ id, version, createdAt, updatedAt?, name?, description?, model?, thinkingLevel?, settings?, resources?, tools?, mcpServers?, activeTools?, metadata? }` (tenant tools as `{ kind: \"tenant\", tool, revision }` and `mcpServers` as `[{ name, revision }]`: the revisions this version pinned)";
const CHECKS =
  `\`settings\`, \`resources\` and \`tools\` take the shapes \`POST /v1/sessions\` takes, and are checked the same way: a builtin tool must exist (422 \`UnknownTool\`), parameters must compile and an http tool's URL must pass the egress policy (400 \`ValidationFailed\`); an http tool is stored without a signing secret (each session made from the agent gets its own). A \`tools\` value \`{ kind: "tenant", tool }\` names a tenant tool (\`PUT /v1/tools/{name}\`) and \`mcpServers\` names tenant MCP servers; the version pins the current revision of each (one that does not exist: 422 \`UnknownTool\`, \`details.tools\` or \`details.mcpServers\`). \`activeTools\` may name only tools the agent defines or its MCP servers' tools as the pinned revisions list them (422 \`UnknownTool\`). \`model\` and \`settings.defaultModel\` must be models the tenant can use (422 \`UnknownModel\`). \`metadata\`: at most ${MAX_METADATA_KEYS} keys of 1–${MAX_METADATA_KEY_CHARS} characters of A–Z a–z 0–9 _ - . (as for a session's metadata), values of at most ${MAX_METADATA_VALUE_CHARS} characters. One version is at most ${MAX_AGENT_VERSION_BYTES / 1024} KiB of JSON (422 \`LimitExceeded\`, \`details.resource: "agent_version_bytes"\`). Nothing is written when a check fails.`;
const PAGES = "`limit` 1–1000, default 50; a page also ends before 4 MiB of JSON (with a `nextCursor`).";
const EXAMPLE = {
  id: "support",
  name: "Support assistant",
  model: { provider: "scripted", modelId: "echo" },
  settings: { systemPrompt: "You answer support questions briefly." },
  tools: { current_time: { kind: "builtin" } },
  activeTools: ["current_time"],
  metadata: { team: "support" },
};

export const agentCatalog: readonly CatalogRoute[] = [
  {
    method: "post", path: "/v1/agents", operationId: "createAgent", tag: "Agents", auth: "tenant",
    summary: "Create an agent (its version 1)",
    description: `\`id\` defaults to a fresh \`ag_…\` id; an id in use, or once used by a deleted agent, is 409 \`AgentExists\`. ${CHECKS} A tenant holds at most ${MAX_AGENTS} agents (422 \`LimitExceeded\`, \`details.resource: "agents"\`).`,
    body: CreateAgentSchema, example: EXAMPLE, idempotent: true,
    responses: { 201: { description: `The agent's version 1: ${AGENT}`, schema: AgentSchema } },
    errors: ["AgentExists", "UnknownModel", "UnknownTool", "DeferredUnsupported", "LimitExceeded"],
  },
  {
    method: "get", path: "/v1/agents", operationId: "listAgents", tag: "Agents", auth: "tenant",
    summary: "The tenant's agents",
    description: `The latest version of each agent (deleted ones are left out), in creation order. ${PAGES}`,
    query: PageQuerySchema,
    responses: { 200: { description: "A page of agents", schema: pageSchema(AgentSchema) } },
    errors: [],
  },
  {
    method: "get", path: "/v1/agents/{id}", operationId: "getAgent", tag: "Agents", auth: "tenant",
    summary: "An agent's latest version", description: "A deleted agent is 404 `AgentNotFound` here (its versions stay readable).",
    pathParams: ID,
    responses: { 200: { description: AGENT, schema: AgentSchema } },
    errors: ["AgentNotFound"],
  },
  {
    method: "patch", path: "/v1/agents/{id}", operationId: "updateAgent", tag: "Agents", auth: "tenant",
    summary: "Make an agent's next version",
    description: `A JSON Merge Patch (RFC 7396) over the latest version: a member left out keeps its value, an object merges member by member, \`null\` removes a member, an array (\`activeTools\`) is replaced. The merged definition must be valid (400 naming the field) and passes the checks of a creation. ${CHECKS} Versions are immutable: the answer is the new version, \`version\` one more than the latest. An agent has at most ${MAX_AGENT_VERSIONS} versions (422 \`LimitExceeded\`, \`details.resource: "agent_versions"\`).`,
    pathParams: ID, body: PatchAgentSchema, example: { settings: { systemPrompt: "You answer support questions in two sentences." }, metadata: { team: null } },
    responses: { 200: { description: `The new version: ${AGENT}`, schema: AgentSchema } },
    errors: ["AgentNotFound", "UnknownModel", "UnknownTool", "DeferredUnsupported", "LimitExceeded"],
  },
  {
    method: "delete", path: "/v1/agents/{id}", operationId: "deleteAgent", tag: "Agents", auth: "tenant",
    summary: "Delete an agent",
    description: "It leaves `GET /v1/agents` and `GET /v1/agents/{id}` answers 404 `AgentNotFound`; its versions stay readable under `…/versions` (with `deletedAt`). Its id is not reused. Deleting it again is 404 `AgentNotFound`.",
    pathParams: ID,
    responses: { 204: { description: "Deleted", content: "none" } },
    errors: ["AgentNotFound"],
  },
  {
    method: "get", path: "/v1/agents/{id}/versions", operationId: "listAgentVersions", tag: "Agents", auth: "tenant",
    summary: "An agent's versions",
    description: `Every version, oldest first, also of a deleted agent. ${PAGES}`,
    pathParams: ID, query: PageQuerySchema,
    responses: { 200: { description: "A page of versions", schema: pageSchema(AgentSchema) } },
    errors: ["AgentNotFound"],
  },
  {
    method: "get", path: "/v1/agents/{id}/versions/{version}", operationId: "getAgentVersion", tag: "Agents", auth: "tenant",
    summary: "One version of an agent", description: "Also of a deleted agent. An unknown version is 404 `AgentNotFound` with `details.version`.",
    pathParams: { ...ID, version: AgentVersionParamSchema },
    responses: { 200: { description: AGENT, schema: AgentSchema } },
    errors: ["AgentNotFound"],
  },
];
