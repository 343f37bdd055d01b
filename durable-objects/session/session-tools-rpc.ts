import { schemaProblem } from "../../harness/execution/tool-arguments.ts";
import type { RpcResult } from "../../schema/errors.ts";
import { MAX_SESSION_TOOLS, type ClientToolResult, type ToolDefinitionInput, type ToolDefinitionReply, type ToolDefinitionView } from "../../schema/tools.ts";
import type { Wire } from "../../schema/wire.ts";
import { sealSecret, secretBoxKey, secretHint } from "../../secrets/secret-box.ts";
import { BUILTIN_TOOL_NAMES, builtinTool } from "../../tools/builtin/index.ts";
import { toolDefinition, toolDefinitionsPrefix, toolSecretContext, toolView, type StoredToolDefinition } from "../../tools/definitions.ts";
import { definedToolNames } from "../../tools/registry.ts";
import { toolUrlProblem } from "../../tools/tool-url.ts";
import { asResult, parseWire, RpcError, unwrapLane } from "../rpc-errors.ts";
import { SessionLaneRpc } from "./session-lane-rpc.ts";

/**
 * Tool definitions as session data (ARCHITECTURE D11, spec/API.md `…/tools/{name}`): listed,
 * created or replaced, deleted. Everything is checked before anything is written; an http tool's
 * signing secret is generated on creation, answered once, and stored only sealed.
 */
export abstract class SessionToolsRpc extends SessionLaneRpc {
  async listTools(): Promise<Wire<RpcResult<ToolDefinitionView[]>>> {
    return asResult(() => this.session().scanValues(toolDefinitionsPrefix()).map((stored) => toolView(stored.address.key, stored.value)));
  }

  async putTool(name: string, input: Wire<ToolDefinitionInput>): Promise<Wire<RpcResult<ToolDefinitionReply>>> {
    return asResult(async () => {
      const definition = parseWire(input);
      const session = this.session();
      const existing = session.getValue(toolDefinition(name))?.value;
      if (!existing && definedToolNames(session).size >= MAX_SESSION_TOOLS) {
        throw new RpcError({ code: "LimitExceeded", message: `A session may define at most ${MAX_SESSION_TOOLS} tools`, details: { resource: "tools", limit: MAX_SESSION_TOOLS } });
      }
      // A new http tool (or one that was another kind) gets a fresh secret; a replaced one keeps its own.
      const keepSecret = existing?.kind === "http" && definition.kind === "http" ? existing : undefined;
      const secret = definition.kind === "http" && !keepSecret ? newToolSecret() : undefined;
      const stored = await this.storedDefinition(name, definition, secret, keepSecret);
      await session.setValue(toolDefinition(name), stored);
      return { ...toolView(name, stored), created: !existing, ...(secret !== undefined && { secret }) };
    });
  }

  async deleteTool(name: string): Promise<Wire<RpcResult<{ deleted: true }>>> {
    return asResult(async () => {
      const harness = await this.harness();
      const session = this.session();
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
      const lane = await this.lane(laneName);
      const accepted = unwrapLane(await lane.submitToolResult(operationId, toolCallId, parseWire(result)));
      void (async () => {
        const first = await lane.drive({ operationId, waitForRetry: false });
        if (first.ok && first.value.kind === "waiting" && first.value.reason === "client_tool") await lane.drive({ operationId, waitForRetry: false });
      })().catch(() => undefined);
      return accepted;
    });
  }

  private async storedDefinition(name: string, input: ToolDefinitionInput, secret: string | undefined, kept: StoredToolDefinition | undefined): Promise<StoredToolDefinition> {
    if (input.kind === "builtin") {
      const builtin = builtinTool(name, input.description, { clock: Date.now, values: { get: () => undefined, set: async () => {}, list: () => [] } });
      if (!builtin) {
        throw new RpcError({ code: "UnknownTool", message: `There is no builtin tool ${name}; builtin tools are ${BUILTIN_TOOL_NAMES.join(", ")}`, details: { tools: [name] } });
      }
      const { description, parameters, replay } = builtin.declaration;
      return { kind: "builtin", description, parameters, replay };
    }
    const problem = schemaProblem(input.parameters);
    if (problem) throw new RpcError({ code: "ValidationFailed", message: problem, details: { field: "parameters" } });
    if (input.kind === "client") {
      return { kind: "client", description: input.description, parameters: input.parameters, replay: "safe", ...(input.timeoutMs !== undefined && { timeoutMs: input.timeoutMs }) };
    }
    const urlProblem = toolUrlProblem(input.url, this.env.LOCAL_DEV === "on");
    if (urlProblem) throw new RpcError({ code: "ValidationFailed", message: urlProblem, details: { field: "url" } });
    const sealed = secret === undefined ? kept : { sealedSecret: await this.sealToolSecret(name, secret), secretHint: secretHint(secret) };
    return {
      kind: "http",
      description: input.description,
      parameters: input.parameters,
      replay: input.replay ?? "never",
      url: input.url,
      ...(input.timeoutMs !== undefined && { timeoutMs: input.timeoutMs }),
      ...(sealed?.sealedSecret !== undefined && { sealedSecret: sealed.sealedSecret }),
      ...(sealed?.secretHint !== undefined && { secretHint: sealed.secretHint }),
    };
  }

  private async sealToolSecret(name: string, secret: string): Promise<string> {
    const key = await secretBoxKey(this.env.SECRETS_KEY, "tool-secret");
    return sealSecret(key, secret, toolSecretContext(this.session().metadata.id, name));
  }
}

/** 32 random bytes, base64url, with a prefix that tells what it is when it turns up in a log. */
function newToolSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `tsk_${btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")}`;
}
