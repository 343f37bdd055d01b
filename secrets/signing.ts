import { fromBase64Url, toBase64Url } from "./base64url.ts";
import { secretsKeyProblem, SecretsKeyMissing } from "./secret-box.ts";

/**
 * Signatures (HMAC-SHA-256) over texts the service hands out and must later recognise as its own
 * (browser tokens): a key per purpose, derived with HKDF from the deployment secret `SECRETS_KEY`
 * under a salt of its own, so no signing key is ever an encryption key of the secret box.
 */
export type SigningPurpose = "browser-token";

const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

/** The signing key of one purpose; derived once per isolate. Throws SecretsKeyMissing without a usable `SECRETS_KEY`. */
export function signingKey(deploymentSecret: string | undefined, purpose: SigningPurpose): Promise<CryptoKey> {
  const problem = secretsKeyProblem(deploymentSecret);
  if (problem !== undefined || deploymentSecret === undefined) return Promise.reject(new SecretsKeyMissing(problem));
  const cacheKey = `${purpose}\n${deploymentSecret}`;
  let key = keys.get(cacheKey);
  if (!key) {
    key = derive(deploymentSecret, purpose);
    // One entry per purpose: a changed secret (a test's own environment) replaces, never accumulates.
    for (const known of keys.keys()) if (known.startsWith(`${purpose}\n`)) keys.delete(known);
    keys.set(cacheKey, key);
  }
  return key;
}

async function derive(deploymentSecret: string, purpose: SigningPurpose): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey("raw", encoder.encode(deploymentSecret), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: encoder.encode("durable-agent-sessions/signing"), info: encoder.encode(purpose) },
    material,
    { name: "HMAC", hash: "SHA-256", length: 256 },
    false,
    ["sign", "verify"],
  );
}

/** The signature of `text`, base64url (43 characters). */
export async function sign(key: CryptoKey, text: string): Promise<string> {
  return toBase64Url(new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(text))));
}

/** Whether `signature` is `text`'s signature under `key` (compared in constant time by WebCrypto). */
export async function verifySignature(key: CryptoKey, text: string, signature: string): Promise<boolean> {
  const bytes = fromBase64Url(signature);
  return bytes !== undefined && crypto.subtle.verify("HMAC", key, bytes, encoder.encode(text));
}
