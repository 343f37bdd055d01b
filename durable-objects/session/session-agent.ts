import type { SessionReader } from "../../harness/session/mutation.ts";
import type { Write } from "../../harness/session/storage.ts";
import { deleteValue } from "../../harness/session/writes.ts";
import type { AgentVersionRef } from "../../schema/agent-binding.ts";
import type { LaneConfiguration } from "../../schema/lane.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { SessionMetadata, SessionMetadataPatch } from "../../schema/session-metadata.ts";
import type { Wire } from "../../schema/wire.ts";
import { toolDefinition, toolDefinitionsPrefix } from "../../tools/definitions.ts";
import { mcpServer, mcpServersPrefix } from "../../tools/mcp-definitions.ts";
import type { AgentForSession } from "../../tools/tenant-copies.ts";
import { MAX_SESSION_MCP_SERVERS } from "../../schema/mcp.ts";
import { applySettingsPatch, type HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import { MAX_SESSION_TOOLS } from "../../schema/tools.ts";
import { asResult, parseWire, RpcError } from "../rpc/rpc-errors.ts";
import { agentResources, agentSettings, agentTools, agentWrites, bindingOf } from "./agent-configuration.ts";
import { assertCanDefer } from "./deferred-check.ts";
import { metadataPatchWrite } from "./metadata-patch.ts";
import { assertValidSettings } from "./settings-check.ts";
import type { SessionHost } from "./session-host.ts";

/** What this module reaches of the host (session-host.ts). */
type AgentHost = Pick<SessionHost, "harness" | "session" | "toolDefinitionContext">;

/**
 * What a move answers: the version now bound, the seq of the commit that bound it (the tenant's
 * index keeps the newest of concurrent moves by it), and the secrets of http tools it brought anew.
 */
export interface AgentMove {
  agent: AgentVersionRef;
  seq: number;
  toolSecrets: Record<string, string>;
  /** The metadata as merged, when the move carried a metadata patch (written in the same commit). */
  metadata?: SessionMetadata;
}

/**
 * A session's move to another agent version (spec/API.md "Agents", `PATCH /v1/sessions/{sid}
 * { agent }`): the whole session takes the version's settings, resources, tools and MCP servers,
 * and every lane its lane configuration, in one commit; each lane's next operation captures all
 * of it, and an operation already running keeps the version it was accepted under (its record
 * says so).
 */
export class SessionAgent {
  constructor(private readonly host: AgentHost) {}

  /** `settingsPatch`: the PATCH's own settings, applied over the version's in the same commit (one refusal, nothing written). */
  async moveToAgent(input: Wire<AgentForSession>, settingsPatch?: Wire<HarnessSettingsPatch>, metadataPatch?: SessionMetadataPatch): Promise<Wire<RpcResult<AgentMove>>> {
    return asResult(async () => {
      const bundle = parseWire(input);
      const harness = await this.host.harness();
      const session = this.host.session();
      // Checked and sealed before the commit; which of them the session takes is decided on the line.
      const previous = new Map(session.scanValues(toolDefinitionsPrefix()).map(({ address, value }) => [address.key, value]));
      const tools = await agentTools(bundle, this.host.toolDefinitionContext(session.metadata.id), {
        // The version's own http tool that the session already held from the agent keeps its
        // secret. A tenant tool's copy (also from the agent) holds the tenant tool's one shared
        // secret: the version's own tool under its name gets a session secret of its own.
        keep: (name) => {
          const held = previous.get(name);
          return held?.fromAgent && held.kind === "http" && !held.tenantTool ? held : undefined;
        },
      });
      // Recomputed on the line with the tools the session takes (as at creation, a tool the
      // session defined itself under a name of the version's is not the version's to activate).
      let binding = bindingOf(bundle, tools);
      const settings = applySettingsPatch(agentSettings(bundle.agent), settingsPatch === undefined ? {} : parseWire(settingsPatch));
      let brought: Record<string, unknown> = {};
      let metadata: SessionMetadata | undefined;
      const writes = (m: SessionReader): Write[] => {
        // A tool or MCP server the session defined itself keeps its name: the agent's is not taken.
        const own = (name: string): boolean => {
          const held = m.getValue(toolDefinition(name))?.value;
          return held !== undefined && !held.fromAgent && !held.tenantTool;
        };
        const ownServer = (name: string): boolean => {
          const held = m.getValue(mcpServer(name))?.value;
          return held !== undefined && !held.tenantServer;
        };
        const taken = {
          tools: Object.fromEntries(Object.entries(tools.tools).filter(([name]) => !own(name))),
          mcpServers: Object.fromEntries(Object.entries(tools.mcpServers).filter(([name]) => !ownServer(name))),
          secrets: tools.secrets,
        };
        brought = taken.tools;
        binding = bindingOf(bundle, taken);
        assertWithinBounds(m, taken.tools, taken.mcpServers);
        // The PATCH's metadata, bounded on the line: a refusal writes nothing of the move either.
        const patched = metadataPatch === undefined ? undefined : metadataPatchWrite(m, metadataPatch);
        metadata = patched?.metadata;
        return [...leftBehind(m, taken.tools, taken.mcpServers), ...agentWrites(taken, binding), ...(patched?.writes ?? [])];
      };
      // Every lane takes the version's lane configuration in the same commit (config_update events,
      // as a PATCH of its configuration would emit): what the version leaves out is what a session
      // created from it starts with (mainLaneWrites), and a lane keeps its model when the version
      // names none. A repeat of the move sets what is already set.
      const laneConfiguration = (_lane: string, current: LaneConfiguration): LaneConfiguration => ({
        model: binding.lane.model ?? current.model,
        thinkingLevel: binding.lane.thinkingLevel ?? "off",
        activeToolNames: [...(binding.lane.activeTools ?? [])],
      });
      const { seq } = await harness.replaceConfiguration({ settings, resources: agentResources(bundle.agent), writes, lanes: laneConfiguration }, (next) => {
        assertValidSettings(next);
        const lanes = harness.lanes().flatMap(({ name }) => {
          const lane = harness.getLane(name);
          return lane ? [{ lane: name, model: binding.lane.model ?? lane.getModel(), pending: lane.pendingDeferredModes() }] : [];
        });
        assertCanDefer(next.streamOptions.deferred, lanes);
        // A pending run starts on its lane's model of its turn: the deferred answers it asked for too.
        for (const { lane, model, pending } of lanes) for (const mode of pending) assertCanDefer(mode, [{ lane, model }]);
      });
      // Secrets of the http tools the session took anew (not of those it kept its own of).
      const toolSecrets = Object.fromEntries(Object.entries(tools.secrets).filter(([name]) => name in brought));
      return { agent: { id: binding.id, version: binding.version }, seq, toolSecrets, ...(metadata !== undefined && { metadata }) };
    });
  }
}

/**
 * A session's bounds hold after a move as after a creation: its own tools (and MCP servers) and
 * those the version brings, together (422 LimitExceeded, nothing written).
 */
function assertWithinBounds(m: SessionReader, tools: Record<string, unknown>, servers: Record<string, unknown>): void {
  const ownTools = m.scanValues(toolDefinitionsPrefix()).filter(({ address, value }) => !value.fromAgent && !value.tenantTool && !(address.key in tools)).length;
  const toolCount = ownTools + Object.keys(tools).length;
  if (toolCount > MAX_SESSION_TOOLS) {
    throw new RpcError({ code: "LimitExceeded", message: `A session may define at most ${MAX_SESSION_TOOLS} tools; its own and the agent's are ${toolCount}`, details: { resource: "tools", limit: MAX_SESSION_TOOLS } });
  }
  const ownServers = m.scanValues(mcpServersPrefix()).filter(({ address, value }) => !value.tenantServer && !(address.key in servers)).length;
  const serverCount = ownServers + Object.keys(servers).length;
  if (serverCount > MAX_SESSION_MCP_SERVERS) {
    throw new RpcError({ code: "LimitExceeded", message: `A session may hold at most ${MAX_SESSION_MCP_SERVERS} MCP servers; its own and the agent's are ${serverCount}`, details: { resource: "mcpServers", limit: MAX_SESSION_MCP_SERVERS } });
  }
}

/** Deletes what the session holds from the version it leaves and the new one does not bring. */
function leftBehind(m: SessionReader, tools: Record<string, unknown>, servers: Record<string, unknown>): Write[] {
  const staleTools = m.scanValues(toolDefinitionsPrefix()).filter(({ address, value }) => (value.fromAgent || value.tenantTool) && !(address.key in tools));
  const staleServers = m.scanValues(mcpServersPrefix()).filter(({ address, value }) => value.tenantServer && !(address.key in servers));
  return [...staleTools.map(({ address }) => deleteValue(toolDefinition(address.key))), ...staleServers.map(({ address }) => deleteValue(mcpServer(address.key)))];
}
