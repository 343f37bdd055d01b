import { schemaProblem } from "../../harness/execution/tool-arguments.ts";
import { egressDetails, egressProblem } from "../../schema/egress-policy.ts";
import type { ToolDefinitionInput } from "../../schema/tools.ts";
import { sealSecret, secretBoxKey, secretHint } from "../../secrets/secret-box.ts";
import { BUILTIN_TOOL_NAMES, builtinTool } from "../../tools/builtin/index.ts";
import { toolSecretContext, type StoredToolDefinition } from "../../tools/definitions.ts";
import { invalidInput, RpcError } from "../rpc/rpc-errors.ts";

// A tool definition as a client sends it, turned into what the session stores (ARCHITECTURE D11):
// the checks the edge cannot make (a builtin name exists, the parameters compile, the URL is
// allowed here) and the sealing of an http tool's secret. One procedure for `PUT …/tools/{name}`
// and for the tools given at session creation, so both refuse and store alike.

export interface ToolDefinitionContext {
  sessionId: string;
  /** The deployment secret the per-tool secrets are sealed under. */
  secretsKey: string;
  /** Plain http to loopback hosts (local development only). */
  allowLoopback: boolean;
}

/**
 * The stored form of `input`; an http tool's `secret` is sealed into it. Throws a
 * ValidationFailed or UnknownTool RpcError. `at` is where the definition sits in the request body
 * (`""` for `PUT …/tools/{name}`, `tools.<name>` at session creation), for the 400's field path.
 */
export async function storedToolDefinition(name: string, input: ToolDefinitionInput, context: ToolDefinitionContext, secret: string | undefined, at: string): Promise<StoredToolDefinition> {
  const field = (key: string): string => (at === "" ? key : `${at}.${key}`);
  if (input.kind === "builtin") {
    const builtin = builtinTool(name, input.description, { clock: Date.now, values: { get: () => undefined, set: async () => {}, list: () => [] } });
    if (!builtin) {
      throw new RpcError({ code: "UnknownTool", message: `There is no builtin tool ${name}; builtin tools are ${BUILTIN_TOOL_NAMES.join(", ")}`, details: { tools: [name] } });
    }
    const { description, parameters, replay } = builtin.declaration;
    return { kind: "builtin", description, parameters, replay };
  }
  const problem = schemaProblem(input.parameters);
  if (problem) throw invalidInput(field("parameters"), problem, { field: "parameters", tool: name });
  if (input.kind === "client") {
    return { kind: "client", description: input.description, parameters: input.parameters, replay: "safe", ...(input.timeoutMs !== undefined && { timeoutMs: input.timeoutMs }) };
  }
  const urlProblem = egressProblem(input.url, context.allowLoopback);
  if (urlProblem) throw invalidInput(field("url"), urlProblem.message, { field: "url", tool: name, ...egressDetails(urlProblem) });
  return {
    kind: "http",
    description: input.description,
    parameters: input.parameters,
    replay: input.replay ?? "never",
    url: input.url,
    ...(input.timeoutMs !== undefined && { timeoutMs: input.timeoutMs }),
    ...(secret !== undefined && { sealedSecret: await sealToolSecret(context, name, secret), secretHint: secretHint(secret) }),
  };
}

/** `definition` with the secret of `kept` instead of its own (a replaced http tool keeps its secret). */
export function withSecretOf(definition: StoredToolDefinition, kept: StoredToolDefinition): StoredToolDefinition {
  const { sealedSecret: _own, secretHint: _ownHint, ...rest } = definition;
  return {
    ...rest,
    ...(kept.sealedSecret !== undefined && { sealedSecret: kept.sealedSecret }),
    ...(kept.secretHint !== undefined && { secretHint: kept.secretHint }),
  };
}

async function sealToolSecret(context: ToolDefinitionContext, name: string, secret: string): Promise<string> {
  const key = await secretBoxKey(context.secretsKey, "tool-secret");
  return sealSecret(key, secret, toolSecretContext(context.sessionId, name));
}

/** 32 random bytes, base64url, with a prefix that tells what it is when it turns up in a log. */
export function newToolSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `tsk_${btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")}`;
}

/** The inverse of `storedToolDefinition`: a definition as `PUT …/tools/{name}` takes it (an export's), never its sealed secret nor its hint. */
export function toolInputOf(stored: StoredToolDefinition): ToolDefinitionInput {
  switch (stored.kind) {
    case "builtin":
      return { kind: "builtin", description: stored.description };
    case "http":
      return {
        kind: "http",
        description: stored.description,
        parameters: stored.parameters,
        url: stored.url ?? "",
        replay: stored.replay,
        ...(stored.timeoutMs !== undefined && { timeoutMs: stored.timeoutMs }),
      };
    case "client":
      return { kind: "client", description: stored.description, parameters: stored.parameters, ...(stored.timeoutMs !== undefined && { timeoutMs: stored.timeoutMs }) };
  }
}
