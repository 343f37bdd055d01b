import type { Discovery } from "./mcp-discovery.ts";
import type { CachedMcpTool, StoredMcpServer } from "./mcp-definitions.ts";

// How a discovery's outcome enters a server's cached tool list. A failure keeps the tools the
// last success cached (a run never depends on discovery) and records the error. A success replaces
// them, except that a tool the server no longer lists stays, withdrawn, while a lane has it active:
// a lane's active tool that stopped resolving would fail every later run of the lane before the
// model is even asked, where a withdrawn tool only answers its calls with an error.

export type DiscoveryOutcome = { ok: true; discovery: Discovery } | { ok: false; message: string };

export function withDiscovery(server: StoredMcpServer, outcome: DiscoveryOutcome, activeNames: ReadonlySet<string>, now: number): StoredMcpServer {
  if (!outcome.ok) return { ...server, lastError: { message: outcome.message, at: now } };
  const { lastError: _previous, ...rest } = server;
  const listed = new Set(outcome.discovery.tools.map((tool) => tool.name));
  const withdrawn: CachedMcpTool[] = server.tools
    .filter((tool) => !listed.has(tool.name) && activeNames.has(server.prefix + tool.name))
    .map((tool) => ({ ...tool, withdrawn: true }));
  return { ...rest, tools: [...outcome.discovery.tools, ...withdrawn], skippedTools: outcome.discovery.skippedTools, refreshedAt: now };
}

/**
 * The cached tools a new registration of a server starts from (before its discovery, kept should
 * that fail): the previous registration's under the same prefix, but only those the new `allow`
 * admits. One it no longer admits stays, withdrawn, only while a lane has it active (as above);
 * otherwise narrowing `allow` while the server is down would leave every old tool callable.
 */
export function carriedTools(previous: StoredMcpServer | undefined, next: StoredMcpServer, activeNames: ReadonlySet<string>): CachedMcpTool[] {
  if (!previous || previous.prefix !== next.prefix) return [];
  const { allow } = next;
  if (allow === undefined) return previous.tools;
  return previous.tools.flatMap((tool) => {
    if (allow.includes(tool.name)) return [tool];
    return activeNames.has(next.prefix + tool.name) ? [{ ...tool, withdrawn: true }] : [];
  });
}
