import { value, type Value } from "../harness/session/addresses.ts";
import type { JsonObject } from "../schema/json.ts";
import type { ToolDefinitionView } from "../schema/tools.ts";

// Tool definitions are session data (ARCHITECTURE D11): one `pi.tools/{name}` value each, written
// through the API and read by the registry whenever a run resolves a tool. An http tool's signing
// secret is stored sealed (secrets/secret-box.ts), never in plain text.

export interface StoredToolDefinition {
  kind: "builtin" | "http" | "client";
  description: string;
  parameters: JsonObject;
  replay: "never" | "safe";
  url?: string;
  timeoutMs?: number;
  /** An http tool's signing secret, sealed for purpose "tool-secret" and bound to `toolSecretContext`. */
  sealedSecret?: string;
  secretHint?: string;
  /** Copied from the agent version the session is bound to (replaced or removed when it moves to another). */
  fromAgent?: true;
  /** A copy of a tenant tool's pinned revision (tools/tenant-copies.ts). */
  tenantTool?: { name: string; revision: number };
}

export const toolDefinition = (name: string): Value<StoredToolDefinition> => value("pi.tools", name);
/** Only for `scanValues`: every definition. */
export const toolDefinitionsPrefix = (): Value<StoredToolDefinition> => value("pi.tools", "");

/** Where an http tool's sealed secret lives: a seal copied to another session or tool fails to open. */
export function toolSecretContext(sessionId: string, name: string): string {
  return `session:${sessionId}/tool:${name}`;
}

export function toolView(name: string, stored: StoredToolDefinition): ToolDefinitionView {
  return {
    name,
    kind: stored.kind,
    description: stored.description,
    parameters: stored.parameters,
    replay: stored.replay,
    ...(stored.url !== undefined && { url: stored.url }),
    ...(stored.timeoutMs !== undefined && { timeoutMs: stored.timeoutMs }),
    ...(stored.secretHint !== undefined && { secretHint: stored.secretHint }),
  };
}
