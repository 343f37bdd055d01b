import type { ClientTool, ResolvedTool, ToolDeclaration, ToolsPort } from "../harness/execution/tools.ts";
import { isReservedNamespace, value } from "../harness/session/addresses.ts";
import type { Session } from "../harness/session/session.ts";
import type { JsonValue } from "../schema/json.ts";
import { builtinTool, type BuiltinDependencies } from "./builtin/index.ts";
import type { ApplicationValues } from "./builtin/values.ts";
import { toolDefinition, toolDefinitionsPrefix, type StoredToolDefinition } from "./definitions.ts";
import { httpTool, type HttpToolSettings } from "./http-tool.ts";

export interface ToolRegistryOptions {
  session: Session;
  clock?: () => number;
  /** How http tools reach the outside world; without it http definitions resolve to nothing. */
  http?: HttpToolSettings;
}

/**
 * The Tools port of a hosted session (ARCHITECTURE D11): each name resolves, when asked, from the
 * session's own `pi.tools/{name}` definition to an implementation by kind. Reading on every
 * resolution keeps a run in step with definition changes without any cache to invalidate.
 */
export function createToolRegistry(options: ToolRegistryOptions): ToolsPort {
  const { session } = options;
  const dependencies: BuiltinDependencies = { clock: options.clock ?? Date.now, values: applicationValues(session) };
  return {
    resolve(name: string): ResolvedTool | undefined {
      const stored = session.getValue(toolDefinition(name))?.value;
      if (!stored) return undefined;
      switch (stored.kind) {
        case "builtin":
          return builtinTool(name, stored.description, dependencies);
        case "client":
          return clientTool(name, stored);
        case "http":
          return options.http ? httpTool(session.metadata.id, name, stored, options.http) : undefined;
      }
    },
  };
}

/** The names of every defined tool (what a lane may activate). */
export function definedToolNames(session: Pick<Session, "scanValues">): Set<string> {
  return new Set(session.scanValues(toolDefinitionsPrefix()).map((stored) => stored.address.key));
}

export function declarationOf(name: string, stored: StoredToolDefinition): ToolDeclaration {
  return { name, kind: stored.kind, description: stored.description, parameters: stored.parameters, replay: stored.replay };
}

function clientTool(name: string, stored: StoredToolDefinition): ClientTool {
  return { kind: "client", declaration: declarationOf(name, stored), ...(stored.timeoutMs !== undefined && { timeoutMs: stored.timeoutMs }) };
}

class ReservedNamespace extends Error {
  override readonly name = "ReservedNamespace";
  constructor(namespace: string) {
    super(`The namespace ${namespace} belongs to the runtime; use your own`);
  }
}

function applicationValues(session: Session): ApplicationValues {
  const checked = (namespace: string): string => {
    if (isReservedNamespace(namespace)) throw new ReservedNamespace(namespace);
    return namespace;
  };
  return {
    get: (namespace, key) => session.getValue(value<JsonValue>(checked(namespace), key))?.value,
    set: async (namespace, key, next) => {
      await session.setValue(value<JsonValue>(checked(namespace), key), next);
    },
    list: (namespace, prefix, limit) =>
      session
        .scanValues(value<JsonValue>(checked(namespace), prefix))
        .slice(0, limit)
        .map((stored) => ({ key: stored.address.key, value: stored.value })),
  };
}
