import type { AgentVersionRef } from "../schema/agent-binding.ts";

// How the page names an agent version and a session's metadata (pure: tested without a page).

/** `support @ 2`: the agent and the version a session is bound to, or an operation ran under. */
export const agentVersionText = (agent: AgentVersionRef): string => `${agent.id} @ ${agent.version}`;

/** `plan = pro, user = u_42` in key order, or "none". */
export function metadataText(metadata: Readonly<Record<string, string>>): string {
  const pairs = Object.entries(metadata).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return pairs.length === 0 ? "none" : pairs.map(([key, value]) => `${key} = ${value}`).join(", ");
}
