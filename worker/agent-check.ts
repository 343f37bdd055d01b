import { assertCanDefer } from "../durable-objects/session/deferred-check.ts";
import { storedToolDefinition } from "../durable-objects/session/tool-definition-input.ts";
import { expectedError } from "../durable-objects/rpc/rpc-errors.ts";
import type { AgentDefinition } from "../schema/agents.ts";
import { HttpFailure } from "./http-error.ts";
import { assertTenantCanUse } from "./model-check.ts";

/**
 * The checks a valid agent definition still has to pass before it is stored (nothing is written
 * when one fails), the same a session gets for the same parts: each tool definition as
 * `POST /v1/sessions` checks it (a builtin that exists, parameters that compile, an http URL the
 * egress policy allows: schema/egress-policy.ts), deferred answers only on a model that can give
 * them, and models (`model`, `settings.defaultModel`) the tenant can use now (model-check.ts).
 * An http tool is checked without a secret: each session later made from the agent gets its own.
 * Tenant tools (`{ kind: "tenant" }`) were checked when they were PUT; that they exist, and that
 * `activeTools` names only tools the agent defines or its MCP servers offer, is checked where
 * their revisions are pinned, in the tenant object's writing turn (tenant/agent-pins.ts).
 */
export async function assertUsableAgent(env: Env, tenantId: string, definition: AgentDefinition): Promise<void> {
  const context = { sessionId: "", secretsKey: "", allowLoopback: env.LOCAL_DEV === "on" };
  for (const [name, tool] of Object.entries(definition.tools ?? {})) {
    if (tool.kind !== "tenant") await asEdgeFailure(() => storedToolDefinition(name, tool, context, undefined, `tools.${name}`));
  }
  const model = definition.model ?? definition.settings?.defaultModel ?? undefined;
  if (model) await asEdgeFailure(() => assertCanDefer(definition.settings?.streamOptions?.deferred ?? undefined, [{ lane: "main", model }]));
  if (definition.model) await assertTenantCanUse(env, tenantId, definition.model);
  if (definition.settings?.defaultModel) await assertTenantCanUse(env, tenantId, definition.settings.defaultModel);
}

/** Runs a check shared with the session object, whose refusals are tagged RpcErrors, as an edge check. */
async function asEdgeFailure(check: () => unknown): Promise<void> {
  try {
    await check();
  } catch (error) {
    const tagged = expectedError(error);
    throw tagged ? new HttpFailure(tagged) : error;
  }
}
