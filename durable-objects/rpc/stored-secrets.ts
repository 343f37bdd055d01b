import { openSecret, SecretBoxError, secretBoxKey, SecretsKeyMissing } from "../../secrets/secret-box.ts";
import { RpcError } from "./rpc-errors.ts";

/** Whose secret a seal holds, as the refusal names it (the client registers that one again). */
export type SecretOwner = { tool: string } | { mcpServer: string } | { tenantTool: string } | { tenantMcpServer: string };

/**
 * `openSecret` of a stored seal that a request copies (a fork, a session made from an agent): one
 * that no longer opens, sealed under another SECRETS_KEY, is 409 SecretUnreadable naming its owner
 * (docs/security.md: a changed key makes every sealed secret unreadable), not a 500. A missing key
 * stays the operator's 503.
 */
export async function openStoredSecret(key: CryptoKey, sealed: string, context: string, owner: SecretOwner): Promise<string> {
  try {
    return await openSecret(key, sealed, context);
  } catch (error) {
    if (!(error instanceof SecretBoxError) || error instanceof SecretsKeyMissing) throw error;
    throw new RpcError({ code: "SecretUnreadable", message: "A stored secret no longer opens (SECRETS_KEY changed since it was stored): delete and define that tool or server again for a new one", details: owner });
  }
}

/**
 * Whether a stored tool secret still opens under today's SECRETS_KEY. A PUT that replaces an http
 * tool keeps its secret, unless it no longer opens (sealed under another key): then the PUT gives
 * it a new one, answered once, rather than keeping one no call can be signed with.
 */
export async function toolSecretOpens(secretsKey: string | undefined, sealed: string, context: string): Promise<boolean> {
  try {
    await openSecret(await secretBoxKey(secretsKey, "tool-secret"), sealed, context);
    return true;
  } catch (error) {
    if (!(error instanceof SecretBoxError) || error instanceof SecretsKeyMissing) throw error;
    return false;
  }
}
