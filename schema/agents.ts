import * as v from "valibot";
import { IdSchema, ResourceNameSchema } from "./api.ts";
import { isKeyedObject, namesEachOnce } from "./json.ts";
import { ModelIdentitySchema, ThinkingLevelSchema } from "./lane.ts";
import { HarnessResourcesSchema, SkillSchema } from "./settings.ts";
import { HarnessSettingsPatchSchema } from "./settings-patch.ts";
import { SESSION_METADATA_LIMITS, SessionMetadataPatchSchema, SessionMetadataSchema } from "./session-metadata.ts";
import { MAX_SESSION_MCP_SERVERS, McpServerNameSchema } from "./mcp.ts";
import {
  BuiltinToolInputSchema,
  ClientToolInputSchema,
  HttpToolInputSchema,
  MAX_SESSION_TOOLS,
  ToolNameSchema,
  ToolParametersSchema,
  ToolReplaySchema,
} from "./tools.ts";

// Agents (spec/API.md "Agents"): tenant-level, versioned definitions of what a session runs with:
// model, thinking level, settings, resources, tools, active tools and metadata. `settings`,
// `resources` and `tools` have the shapes a session is created with. Each version is immutable;
// PATCH (a JSON Merge Patch over the latest) makes the next one.

/** Live (not deleted) agents one tenant may hold. */
export const MAX_AGENTS = 100;
/**
 * Agents one tenant may ever create: a deleted agent's versions stay readable (and its id is not
 * reused), so deletions do not make room.
 */
export const MAX_AGENTS_CREATED = 1000;
/** Versions one agent may have (its creation is version 1). */
export const MAX_AGENT_VERSIONS = 1000;
/** The JSON text of one version's definition. */
export const MAX_AGENT_VERSION_BYTES = 256 * 1024;
/** Metadata: at most this many keys, each at most MAX_METADATA_KEY_CHARS, values at most MAX_METADATA_VALUE_CHARS. */
export const MAX_METADATA_KEYS = SESSION_METADATA_LIMITS.keys;
export const MAX_METADATA_KEY_CHARS = SESSION_METADATA_LIMITS.keyLength;
export const MAX_METADATA_VALUE_CHARS = SESSION_METADATA_LIMITS.valueLength;
/** Agent listings and version listings end a page before it would pass this many bytes of JSON (at least one item). */
export const AGENT_PAGE_BYTES_MAX = 4 * 1024 * 1024;

export const AgentIdSchema = IdSchema;

/** `…/versions/{version}`: a positive integer. */
export const AgentVersionParamSchema = v.pipe(
  v.string(),
  v.regex(/^[1-9]\d{0,8}$/, "A version is a positive integer"),
  v.transform(Number),
);

const NameSchema = v.pipe(v.string(), v.maxLength(200));
const DescriptionSchema = v.pipe(v.string(), v.maxLength(4096));

/** String keys to string values, bounded (the tenant's own labels; the service reads none of them). */
export const MetadataSchema = SessionMetadataSchema;
/**
 * A tenant tool (`PUT /v1/tools/{name}`) named by an agent: its session copy is made from the
 * revision the version pinned. A `revision` sent is taken and ignored (each version pins what is
 * current), so a client may post back a reference as `GET /v1/agents/{id}` shows it.
 */
export const TenantToolRefSchema = v.strictObject({ kind: v.literal("tenant"), tool: ToolNameSchema, revision: v.optional(v.number()) });
/** A tenant tool reference as a version stores and shows it: with the revision pinned when the version was made. */
export const PinnedTenantToolRefSchema = v.strictObject({ ...TenantToolRefSchema.entries, revision: v.number() });

/** One of an agent's tools: a session tool definition, or a tenant tool by name. */
export const AgentToolSchema = v.variant("kind", [BuiltinToolInputSchema, HttpToolInputSchema, ClientToolInputSchema, TenantToolRefSchema]);
export type AgentTool = v.InferOutput<typeof AgentToolSchema>;
const PinnedAgentToolSchema = v.variant("kind", [BuiltinToolInputSchema, HttpToolInputSchema, ClientToolInputSchema, PinnedTenantToolRefSchema]);
export type PinnedAgentTool = v.InferOutput<typeof PinnedAgentToolSchema>;

/** The leading guard of an agent's `tools` (valibot's record would take an array too); the OpenAPI document describes the whole by it. */
export const AgentToolsObjectSchema = v.custom<Record<string, unknown>>(
  isKeyedObject,
  "tools must be an object of definitions by tool name (not __proto__, constructor or prototype)",
);
const AgentToolsSchema = v.pipe(
  AgentToolsObjectSchema,
  v.record(ToolNameSchema, AgentToolSchema),
  v.check((tools) => Object.keys(tools).length <= MAX_SESSION_TOOLS, `An agent defines at most ${MAX_SESSION_TOOLS} tools (a session's bound)`),
);

/** Tenant MCP servers (`PUT /v1/mcp-servers/{name}`) by name: a session made from the agent gets copies of the pinned revisions. */
const McpServerNamesSchema = v.pipe(
  v.array(McpServerNameSchema),
  v.maxLength(MAX_SESSION_MCP_SERVERS, `An agent names at most ${MAX_SESSION_MCP_SERVERS} MCP servers (a session's bound)`),
  v.check((names) => new Set(names).size === names.length, "mcpServers names each server once"),
);
/** A tenant MCP server as a version stores and shows it: its name and the revision pinned. */
export const PinnedMcpServerSchema = v.object({ name: v.string(), revision: v.number() });

/** Tool names a new lane activates: names of this agent's `tools`, or of its MCP servers' tools. */
const ActiveToolsSchema = v.pipe(v.array(ToolNameSchema), v.maxLength(256));
/** What a client gives: a set, as a lane's (lane-api.ts), so a version given with a repeated name is refused (stored versions are read as they are). */
const ActiveToolSetSchema = v.pipe(ActiveToolsSchema, v.check((names: string[]) => namesEachOnce(names), "activeTools names each tool once"));

const definitionEntries = {
  name: v.optional(NameSchema),
  description: v.optional(DescriptionSchema),
  /** The model of the lanes a session takes from this agent (checked: one the tenant can use). */
  model: v.optional(ModelIdentitySchema),
  thinkingLevel: v.optional(ThinkingLevelSchema),
  /** The session settings, as `POST /v1/sessions` takes them. */
  settings: v.optional(HarnessSettingsPatchSchema),
  resources: v.optional(HarnessResourcesSchema),
  activeTools: v.optional(ActiveToolsSchema),
  metadata: v.optional(MetadataSchema),
};

const inputEntries = {
  ...definitionEntries,
  activeTools: v.optional(ActiveToolSetSchema),
  /** Tool definitions by name, as `POST /v1/sessions` takes them (an http tool holds no secret here), or tenant tools as `{ kind: "tenant", tool }`. */
  tools: v.optional(AgentToolsSchema),
  /** Names of tenant MCP servers. */
  mcpServers: v.optional(McpServerNamesSchema),
};

/** One version's definition as a client gives it: everything of an Agent but its id, version and times, and no revisions pinned. */
export const AgentDefinitionSchema = v.strictObject(inputEntries);
export type AgentDefinition = v.InferOutput<typeof AgentDefinitionSchema>;

const pinnedEntries = {
  ...definitionEntries,
  /** Tenant tools show the revision this version pinned: `{ kind: "tenant", tool, revision }`. */
  tools: v.optional(v.record(ToolNameSchema, PinnedAgentToolSchema)),
  mcpServers: v.optional(v.array(PinnedMcpServerSchema)),
};
/** One version's definition as it is stored: the tenant tools and MCP servers it names with the revisions pinned. */
export const PinnedAgentDefinitionSchema = v.strictObject(pinnedEntries);
export type PinnedAgentDefinition = v.InferOutput<typeof PinnedAgentDefinitionSchema>;

/** A stored definition as a client would give it again (the pins left out): what a PATCH merges over, to pin afresh. */
export function unpinnedDefinition(pinned: PinnedAgentDefinition): AgentDefinition {
  const { tools, mcpServers, ...rest } = pinned;
  return {
    ...rest,
    ...(tools !== undefined && { tools: Object.fromEntries(Object.entries(tools).map(([name, tool]) => [name, tool.kind === "tenant" ? { kind: tool.kind, tool: tool.tool } : tool])) }),
    ...(mcpServers !== undefined && { mcpServers: mcpServers.map((server) => server.name) }),
  };
}

/** The body of `POST /v1/agents`; `id` defaults to a fresh `ag_…` id. */
export const CreateAgentSchema = v.optional(v.strictObject({ id: v.optional(AgentIdSchema), ...inputEntries }), {});
export type CreateAgent = v.InferOutput<typeof CreateAgentSchema>;

/** A member of a merge patch: absent (unchanged), null (removed) or a value merged in. */
const member = <S extends v.GenericSchema>(schema: S) => v.optional(v.nullable(schema));

/** A skill's or prompt template's patch (both have the same members). */
export const ResourcePatchSchema = v.strictObject({ description: member(SkillSchema.entries.description.wrapped), content: v.optional(SkillSchema.entries.content) });
/** The leading guard of a resource patch map (json.ts isKeyedObject); the OpenAPI document describes the map by it. */
export const ResourcePatchesObjectSchema = v.custom<Record<string, unknown>>(isKeyedObject, "resource patches must be an object by name (not __proto__, constructor or prototype)");
const resourcePatch = v.pipe(ResourcePatchesObjectSchema, v.record(ResourceNameSchema, v.nullable(ResourcePatchSchema)));

/** A tool's patch: any of its members (whichever kind it is); the merged definition is checked whole. */
export const ToolPatchSchema = v.strictObject({
  kind: v.optional(v.picklist(["builtin", "http", "client", "tenant"])),
  tool: member(ToolNameSchema),
  /** A tenant tool's pinned revision, as shown: ignored (the version pins what is current). */
  revision: member(v.number()),
  description: member(v.string()),
  parameters: member(ToolParametersSchema),
  url: member(v.string()),
  timeoutMs: member(v.number()),
  replay: member(ToolReplaySchema),
});
/** The leading guard of an agent patch's `tools` (json.ts isKeyedObject); the OpenAPI document describes the map by it. */
export const ToolPatchesObjectSchema = v.custom<Record<string, unknown>>(isKeyedObject, "tools must be an object of patches by tool name (not __proto__, constructor or prototype)");

/**
 * The body of `PATCH /v1/agents/{id}`: a JSON Merge Patch (RFC 7396) over the latest version. A
 * member left out keeps its value, an object merges member by member, `null` removes a member,
 * an array (`activeTools`) is replaced. The merged definition must be a valid definition (400
 * naming the field otherwise) and passes the same checks as a creation.
 */
export const PatchAgentSchema = v.strictObject({
  name: member(NameSchema),
  description: member(DescriptionSchema),
  model: member(ModelIdentitySchema),
  thinkingLevel: member(ThinkingLevelSchema),
  settings: member(HarnessSettingsPatchSchema),
  resources: member(v.strictObject({ skills: member(resourcePatch), promptTemplates: member(resourcePatch) })),
  tools: member(v.pipe(ToolPatchesObjectSchema, v.record(ToolNameSchema, v.nullable(ToolPatchSchema)))),
  /** Replaces the list (an array in a merge patch is replaced whole). */
  mcpServers: member(McpServerNamesSchema),
  activeTools: member(ActiveToolSetSchema),
  metadata: member(SessionMetadataPatchSchema),
});
export type PatchAgent = v.InferOutput<typeof PatchAgentSchema>;

/** An agent version as the API shows it. */
export const AgentSchema = v.object({
  id: v.string(),
  version: v.number(),
  /** When the agent was created (its version 1), milliseconds since the epoch. */
  createdAt: v.number(),
  /** When this version was made, on versions after the first. */
  updatedAt: v.optional(v.number()),
  /** When the agent was deleted (only a deleted agent's versions, read under `…/versions`, have it). */
  deletedAt: v.optional(v.number()),
  ...pinnedEntries,
});
export type Agent = v.InferOutput<typeof AgentSchema>;
