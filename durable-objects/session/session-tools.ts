import type { RpcResult } from "../../schema/errors.ts";
import { MAX_SESSION_TOOLS, type ClientToolResult, type ToolDefinitionInput, type ToolDefinitionReply } from "../../schema/tools.ts";
import type { ToolListing } from "../../schema/mcp.ts";
import type { Wire } from "../../schema/wire.ts";
import { mcpServerSummary, mcpServersPrefix, mcpToolIndex, mcpToolView } from "../../tools/mcp-definitions.ts";
import { toolDefinition, toolDefinitionsPrefix, toolSecretContext, toolView } from "../../tools/definitions.ts";
import { ownToolNames } from "../../tools/registry.ts";
import { asResult, parseWire, RpcError, unwrapLane } from "../rpc/rpc-errors.ts";
import { newToolSecret, storedToolDefinition, withSecretOf } from "./tool-definition-input.ts";
import { toolSecretOpens } from "../rpc/stored-secrets.ts";

import type { SessionHost } from "./session-host.ts";
/** What this module reaches of the host (session-host.ts). */
type ToolsHost = Pick<SessionHost, "harness" | "lane" | "session" | "toolDefinitionContext">;

/**
 * Tool definitions as session data (ARCHITECTURE D11, spec/API.md `…/tools/{name}`): listed,
 * created or replaced, deleted. Everything is checked before anything is written; an http tool's
 * signing secret is generated on creation, answered once, and stored only sealed.
 */
export class SessionTools {
  constructor(private readonly host: ToolsHost) {}

  /** The session's own definitions, then its MCP servers' tools (from their caches), and how each server fares. */
  async listTools(): Promise<Wire<RpcResult<ToolListing>>> {
    return asResult(() => {
      const session = this.host.session();
      const index = mcpToolIndex(session);
      const own = session.scanValues(toolDefinitionsPrefix()).map((stored) => toolView(stored.address.key, stored.value));
      const mcp = [...index].map(([name, binding]) => mcpToolView(name, binding));
      const mcpServers = session.scanValues(mcpServersPrefix()).map((stored) => mcpServerSummary(stored.address.key, stored.value, index));
      return { items: [...own, ...mcp], mcpServers };
    });
  }

  async putTool(name: string, input: Wire<ToolDefinitionInput>): Promise<Wire<RpcResult<ToolDefinitionReply>>> {
    return asResult(async () => {
      const definition = parseWire(input);
      const session = this.host.session();
      // Checked and sealed first: the read of the existing definition and the write that depends
      // on it then happen in one synchronous turn, with no await another request could slip into.
      const fresh = definition.kind === "http" ? newToolSecret() : undefined;
      const context = this.host.toolDefinitionContext(session.metadata.id);
      const candidate = await storedToolDefinition(name, definition, context, fresh, "");
      const unreadable = await this.unreadableSecret(name, context.secretsKey, session.metadata.id);
      const existing = session.getValue(toolDefinition(name))?.value;
      if (!existing && ownToolNames(session).size >= MAX_SESSION_TOOLS) {
        throw new RpcError({ code: "LimitExceeded", message: `A session may define at most ${MAX_SESSION_TOOLS} tools`, details: { resource: "tools", limit: MAX_SESSION_TOOLS } });
      }
      // A replaced http tool keeps its secret; a new one (or one that was another kind, or one whose
      // secret no longer opens: SECRETS_KEY changed since) gets the fresh one.
      const kept = existing?.kind === "http" && candidate.kind === "http" && existing.sealedSecret !== unreadable ? existing : undefined;
      const stored = kept ? withSecretOf(candidate, kept) : candidate;
      await session.setValue(toolDefinition(name), stored);
      return { ...toolView(name, stored), created: !existing, ...(!kept && fresh !== undefined && { secret: fresh }) };
    });
  }

  /** The stored seal of http tool `name` when it no longer opens (read before the writing turn, compared in it). */
  private async unreadableSecret(name: string, secretsKey: string | undefined, sessionId: string): Promise<string | undefined> {
    const held = this.host.session().getValue(toolDefinition(name))?.value;
    if (held?.kind !== "http" || held.sealedSecret === undefined) return undefined;
    return (await toolSecretOpens(secretsKey, held.sealedSecret, toolSecretContext(sessionId, name))) ? undefined : held.sealedSecret;
  }

  async deleteTool(name: string): Promise<Wire<RpcResult<{ deleted: true }>>> {
    return asResult(async () => {
      const harness = await this.host.harness();
      const session = this.host.session();
      if (!session.getValue(toolDefinition(name))) throw new RpcError({ code: "ToolNotFound", message: `Tool ${name} is not defined` });
      const lanes = harness.lanes().filter((lane) => harness.getLane(lane.name)?.state.configuration.activeToolNames.includes(name)).map((lane) => lane.name);
      if (lanes.length > 0) {
        throw new RpcError({ code: "ToolInUse", message: `Tool ${name} is active on lanes ${lanes.join(", ")}; remove it from their activeTools first`, details: { lanes } });
      }
      await session.deleteValue(toolDefinition(name));
      return { deleted: true as const };
    });
  }

  /**
   * A client tool's result: stored on the line (once), then the operation is driven so its pass
   * stages it. A pass that was live when the result landed may have parked just before: then a
   * new pass takes the result (the due row written with the result covers a process loss).
   */
  async submitToolResult(laneName: string, operationId: string, toolCallId: string, result: Wire<ClientToolResult>): Promise<Wire<RpcResult<{ accepted: true }>>> {
    return asResult(async () => {
      const lane = await this.host.lane(laneName);
      const accepted = unwrapLane(await lane.submitToolResult(operationId, toolCallId, parseWire(result)));
      void (async () => {
        const first = await lane.drive({ operationId, waitForRetry: false });
        if (first.ok && first.value.kind === "waiting" && first.value.reason === "client_tool") await lane.drive({ operationId, waitForRetry: false });
      })().catch(() => undefined);
      return accepted;
    });
  }
}
