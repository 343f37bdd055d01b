import { sealSecret, secretBoxKey } from "../../secrets/secret-box.ts";
import { openStoredSecret } from "../rpc/stored-secrets.ts";
import { mcpCredentialContext, type StoredMcpServer } from "../../tools/mcp-definitions.ts";
import type { ForkValue } from "./storage/fork-source.ts";

/**
 * An MCP server's static headers are sealed to their session (tools/mcp-definitions.ts), so a
 * copied registration is opened with the source's context and sealed again with the fork's: the
 * fork reaches the server with the same credentials. Done before the fork's last (synchronous)
 * transaction, like the http tools' secrets.
 */
export async function resealMcpCredentials(values: ForkValue[], secretsKey: string, sourceSessionId: string, sessionId: string): Promise<ForkValue[]> {
  if (!values.some((stored) => stored.namespace === "pi.mcp")) return values;
  const key = await secretBoxKey(secretsKey, "mcp-credential");
  return Promise.all(
    values.map(async (stored) => {
      if (stored.namespace !== "pi.mcp") return stored;
      const server: StoredMcpServer = JSON.parse(stored.json);
      if (server.sealedHeaders === undefined) return stored;
      const headers = await openStoredSecret(key, server.sealedHeaders, mcpCredentialContext(sourceSessionId, stored.key), { mcpServer: stored.key });
      const sealedHeaders = await sealSecret(key, headers, mcpCredentialContext(sessionId, stored.key));
      return { ...stored, json: JSON.stringify({ ...server, sealedHeaders }) };
    }),
  );
}
