import { branchTip, laneConfig, laneState, sessionAgent, type AgentBinding } from "../../harness/session/builtin-addresses.ts";
import type { Write } from "../../harness/session/storage.ts";
import { setValue } from "../../harness/session/writes.ts";
import type { DurableLaneState } from "../../harness/runtime/types.ts";
import type { AgentDefinition } from "../../schema/agents.ts";
import type { LaneConfiguration, ModelIdentity } from "../../schema/lane.ts";
import { DEFAULT_SETTINGS, resourcesOverLimit, type HarnessResources, type HarnessSettings } from "../../schema/settings.ts";
import { invalidInputError } from "../../schema/errors.ts";
import { applySettingsPatch, type HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import { MAX_SESSION_TOOLS, type ToolDefinitionInput } from "../../schema/tools.ts";
import { resourcesAddress, settingsAddress } from "../../harness/runtime/settings.ts";
import { toolDefinition, type StoredToolDefinition } from "../../tools/definitions.ts";
import { mcpServer, type StoredMcpServer } from "../../tools/mcp-definitions.ts";
import type { AgentForSession } from "../../tools/tenant-copies.ts";
import { RpcError } from "../rpc/rpc-errors.ts";
import { newToolSecret, storedToolDefinition, type ToolDefinitionContext } from "./tool-definition-input.ts";

// What a session takes from the agent version it is bound to (spec/API.md "Agents"), as plain
// data and writes: the session object commits them in one step, at creation or when the session
// moves to another version. Tenant tools and MCP servers arrive as sealed copies made by the
// tenant for this session (tools/tenant-copies.ts); the agent's own http tools get a secret per
// session, kept when the session moves to a version that still defines the tool.

/** The agent's tools as the session stores them, and the secrets of the http tools that are new. */
export interface AgentTools {
  tools: Record<string, StoredToolDefinition>;
  mcpServers: Record<string, StoredMcpServer>;
  /** New http tools' signing secrets by name: answered once, stored only sealed. */
  secrets: Record<string, string>;
}

/** The settings a session bound to `agent` runs with: the version's patch over the defaults. */
export function agentSettings(agent: Pick<AgentDefinition, "settings">): HarnessSettings {
  return applySettingsPatch(DEFAULT_SETTINGS, agent.settings ?? {});
}

export function agentResources(agent: Pick<AgentDefinition, "resources">): HarnessResources {
  return { skills: { ...agent.resources?.skills }, promptTemplates: { ...agent.resources?.promptTemplates } };
}

/** Resources given beside `agent` at creation: each skill and template by name over the version's. */
export function resourcesOver(base: HarnessResources, own: HarnessResources | undefined): HarnessResources {
  if (!own) return base;
  return { skills: { ...base.skills, ...own.skills }, promptTemplates: { ...base.promptTemplates, ...own.promptTemplates } };
}

/**
 * The version's tools, checked and sealed as `PUT …/tools/{name}` would: its own definitions
 * (`fromAgent`), each http one with the secret `keep` still holds for it or a fresh one, and the
 * tenant's copies as they came. `skip` names tools the request defines itself (they win).
 */
export async function agentTools(
  bundle: AgentForSession,
  context: ToolDefinitionContext,
  options: { keep?: (name: string) => StoredToolDefinition | undefined; skip?: ReadonlySet<string> } = {},
): Promise<AgentTools> {
  const tools: Record<string, StoredToolDefinition> = {};
  const secrets: Record<string, string> = {};
  for (const [name, input] of Object.entries(bundle.agent.tools ?? {})) {
    if (options.skip?.has(name)) continue;
    const copy = bundle.copies.tools[name];
    if (copy) {
      tools[name] = copy;
      continue;
    }
    // A tenant tool the tenant sent no copy of: the version and its copies disagree (never expected).
    if (input.kind === "tenant") throw new RpcError({ code: "UnknownTool", message: `Tenant tool ${input.tool} (as ${name}) came without its copy; retry`, details: { tools: [name] } });
    const own: ToolDefinitionInput = input;
    const kept = own.kind === "http" ? options.keep?.(name) : undefined;
    const secret = own.kind === "http" && !kept?.sealedSecret ? newToolSecret() : undefined;
    const stored = await storedToolDefinition(name, own, context, secret, `agent.tools.${name}`);
    tools[name] = {
      ...stored,
      ...(kept?.sealedSecret !== undefined && { sealedSecret: kept.sealedSecret }),
      ...(kept?.secretHint !== undefined && { secretHint: kept.secretHint }),
      fromAgent: true,
    };
    if (secret !== undefined) secrets[name] = secret;
  }
  return { tools, mcpServers: { ...bundle.copies.mcpServers }, secrets };
}

/** The binding the session stores: the version, and what its lanes take from it. */
export function bindingOf(bundle: AgentForSession, tools: AgentTools): AgentBinding {
  const { agent } = bundle;
  return {
    id: agent.id,
    version: agent.version,
    lane: {
      ...(agent.model !== undefined && { model: agent.model }),
      ...(agent.thinkingLevel !== undefined && { thinkingLevel: agent.thinkingLevel }),
      activeTools: agent.activeTools ?? defaultActiveTools(tools),
    },
  };
}

/**
 * Without `activeTools`, a lane made from the version activates every tool it brings: its own, and
 * its MCP servers' (as discovered). Each name once: a name is one tool (an own tool keeps it over a
 * server's, and between servers the first by name: mcpToolIndex), and a provider refuses a request
 * that declares a name twice.
 */
function defaultActiveTools(tools: AgentTools): string[] {
  return [...new Set([...Object.keys(tools.tools), ...mcpToolNames(tools)])];
}

/** The session names of the tools the version's MCP servers bring (their last discovery), the servers in name order. */
function mcpToolNames(tools: AgentTools): string[] {
  return Object.entries(tools.mcpServers)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .flatMap(([, server]) => server.tools.filter((tool) => !tool.withdrawn).map((tool) => server.prefix + tool.name));
}

/** The writes of the agent's tools, MCP servers and binding. */
export function agentWrites(tools: AgentTools, binding: AgentBinding): Write[] {
  return [
    ...Object.entries(tools.tools).map(([name, stored]) => setValue(toolDefinition(name), stored)),
    ...Object.entries(tools.mcpServers).map(([name, stored]) => setValue(mcpServer(name), stored)),
    setValue(sessionAgent, binding),
  ];
}

/** Lane `main` of a new session, created in the creating commit with the version's lane configuration. */
export function mainLaneWrites(binding: AgentBinding, model: ModelIdentity): Write[] {
  const configuration: LaneConfiguration = {
    model,
    thinkingLevel: binding.lane.thinkingLevel ?? "off",
    activeToolNames: [...(binding.lane.activeTools ?? [])],
  };
  const idle: DurableLaneState = { lastOperationId: null, inbox: [] };
  return [setValue(branchTip("main"), null), setValue(laneConfig<LaneConfiguration>("main"), configuration), setValue(laneState<DurableLaneState>("main"), idle)];
}

/** A session not bound to an agent was asked for its lane configuration. */
export function notBound(): RpcError {
  return new RpcError({ code: "AgentNotBound", message: "This session is not bound to an agent; create it with { agent } or move it to one with PATCH /v1/sessions/{sid} { agent }" });
}

/** What a session created with `{ agent }` writes besides its name and metadata, and the secrets it answers. */
export interface AgentCreation {
  writes: Write[];
  secrets: Record<string, string>;
}

/**
 * The creation of a session bound to `bundle`'s version: the version's settings with the request's
 * patch over them, its resources with the request's by name, its tools (the request's own win by
 * name: `ownTools`), its MCP servers, the binding, and lane `main` on `model` (the version's, else
 * the defaults' as for any new lane: `laneModel`). Everything checked before any write exists.
 */
export async function agentCreation(
  bundle: AgentForSession,
  request: { settings?: HarnessSettingsPatch; resources?: HarnessResources; ownTools: ReadonlySet<string> },
  context: ToolDefinitionContext,
  laneModel: (settings: HarnessSettings, binding: AgentBinding, knownTools: ReadonlySet<string>) => Promise<ModelIdentity>,
): Promise<AgentCreation> {
  const tools = await agentTools(bundle, context, { skip: request.ownTools });
  const total = Object.keys(tools.tools).length + request.ownTools.size;
  if (total > MAX_SESSION_TOOLS) {
    throw new RpcError({ code: "LimitExceeded", message: `A session may define at most ${MAX_SESSION_TOOLS} tools; the agent and the request define ${total}`, details: { resource: "tools", limit: MAX_SESSION_TOOLS } });
  }
  const settings = applySettingsPatch(agentSettings(bundle.agent), request.settings ?? {});
  const resources = resourcesOver(agentResources(bundle.agent), request.resources);
  // Each side was checked on its own; together they must still fit one session (an import of its export checks them so).
  const over = resourcesOverLimit(resources);
  if (over !== undefined) throw new RpcError(invalidInputError("resources", `the agent's and the request's together hold more than a session may: ${over}`));
  const binding = bindingOf(bundle, tools);
  const known = new Set([...Object.keys(tools.tools), ...request.ownTools, ...mcpToolNames(tools)]);
  const model = await laneModel(settings, binding, known);
  return {
    writes: [setValue(settingsAddress, settings), setValue(resourcesAddress, resources), ...agentWrites(tools, binding), ...mainLaneWrites(binding, model)],
    secrets: tools.secrets,
  };
}
