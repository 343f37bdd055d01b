/**
 * Encryption at rest for the secrets tenants hand us (provider API keys, tool signing secrets,
 * MCP server tokens). AES-256-GCM through WebCrypto, so it runs unchanged in workerd and Node.
 *
 * One deployment secret (`SECRETS_KEY`) is stretched with HKDF into one key per purpose, so a
 * provider key can never be opened as a tool secret. Every seal also binds "additional data"
 * naming where the secret lives (for example `tenant:t1/provider:openai`): a sealed value copied
 * to another row or tenant fails to open instead of leaking. The sealed form starts with a version
 * tag so a later key rotation can tell old seals from new.
 *
 * This module imports nothing of ours outside `secrets/`: the worker, the objects, `models/` and
 * `tools/` all use it.
 */

import { fromBase64Url, toBase64Url } from "./base64url.ts";

const VERSION = "v1";
const IV_BYTES = 12;
/** A deployment secret shorter than this is refused: it would be the weakest link. */
export const MIN_SECRETS_KEY_LENGTH = 32;

export type SecretPurpose = "provider-key" | "tool-secret" | "mcp-credential" | "webhook-secret";

export class SecretBoxError extends Error {
  override readonly name: string = "SecretBoxError";
}

/**
 * The deployment has no usable `SECRETS_KEY` (unset, or shorter than the minimum): a configuration
 * gap of the operator, not a client's mistake and not a bug, so callers answer it as such.
 */
export class SecretsKeyMissing extends SecretBoxError {
  override readonly name = "SecretsKeyMissing";
}

/** Why `deploymentSecret` cannot key the secret box, or undefined when it can. */
export function secretsKeyProblem(deploymentSecret: string | undefined): string | undefined {
  if (deploymentSecret === undefined || deploymentSecret.length === 0) {
    return "This service has no SECRETS_KEY configured, so it cannot store secrets; its operator must set the SECRETS_KEY secret";
  }
  if (deploymentSecret.length < MIN_SECRETS_KEY_LENGTH) {
    return `This service's SECRETS_KEY is shorter than ${MIN_SECRETS_KEY_LENGTH} characters, so it cannot store secrets; its operator must set a longer SECRETS_KEY secret`;
  }
  return undefined;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A key for one purpose, derived from the deployment secret. */
export async function secretBoxKey(deploymentSecret: string | undefined, purpose: SecretPurpose): Promise<CryptoKey> {
  // A secret binding that was never set is absent from the environment, whatever its declared type.
  const problem = secretsKeyProblem(deploymentSecret);
  if (problem !== undefined || deploymentSecret === undefined) throw new SecretsKeyMissing(problem);
  const material = await crypto.subtle.importKey("raw", encoder.encode(deploymentSecret), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: encoder.encode("durable-agent-sessions/secret-box"), info: encoder.encode(purpose) },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

/** `v1.<iv>.<ciphertext>` (base64url), bound to `context`. */
export async function sealSecret(key: CryptoKey, plaintext: string, context: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: encoder.encode(context) }, key, encoder.encode(plaintext));
  return `${VERSION}.${toBase64Url(iv)}.${toBase64Url(new Uint8Array(sealed))}`;
}

/** The plaintext of a seal made with the same key and context; throws SecretBoxError otherwise. */
export async function openSecret(key: CryptoKey, sealed: string, context: string): Promise<string> {
  const [version, iv, body, extra] = sealed.split(".");
  if (version !== VERSION || iv === undefined || body === undefined || extra !== undefined) throw new SecretBoxError("Not a sealed secret");
  try {
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: openable(iv), additionalData: encoder.encode(context) },
      key,
      openable(body),
    );
    return decoder.decode(plain);
  } catch {
    // Never echo the cause: it can carry nothing useful and must not carry the secret.
    throw new SecretBoxError("The sealed secret does not open with this key and context");
  }
}

/** The last four characters, for listings (`…abcd`); short secrets show nothing. */
export function secretHint(secret: string): string {
  return secret.length >= 12 ? `…${secret.slice(-4)}` : "…";
}

function openable(text: string): Uint8Array<ArrayBuffer> {
  const bytes = fromBase64Url(text);
  if (!bytes) throw new SecretBoxError("Not a sealed secret");
  return bytes;
}
