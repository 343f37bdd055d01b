import { openSecret, sealSecret, secretBoxKey, secretHint } from "../../secrets/secret-box.ts";
import type { ProviderKeyInfo } from "../../schema/providers.ts";

type ProviderKeyRow = { provider: string; sealed: string; key_hint: string; base_url: string | null };

/** Where a provider key lives: a seal copied to another tenant's or provider's row does not open. */
const sealContext = (tenantId: string, provider: string): string => `tenant:${tenantId}/provider:${provider}`;

/**
 * The TenantObject's provider keys (bring your own key): sealed with the deployment secret
 * `SECRETS_KEY` under the purpose "provider-key", bound to tenant and provider. The plain key
 * leaves this object only in `open`, for one provider request of the tenant's own sessions.
 * Sealing and opening are WebCrypto awaits, so each happens before the SQL turn (put) or after it
 * (open), never between a read and a write that depends on it.
 */
export class TenantProviderKeys {
  constructor(
    private readonly sql: SqlStorage,
    private readonly secretsKey: string,
    private readonly tenantId: string,
  ) {}

  /** Seals outside any SQL turn; `write` then stores it in one synchronous turn. */
  async seal(provider: string, apiKey: string): Promise<string> {
    return sealSecret(await secretBoxKey(this.secretsKey, "provider-key"), apiKey, sealContext(this.tenantId, provider));
  }

  write(provider: string, sealed: string, apiKey: string, baseUrl: string | undefined, now: number): ProviderKeyInfo {
    const keyHint = secretHint(apiKey);
    this.sql.exec(
      `INSERT INTO provider_keys (provider, sealed, key_hint, base_url, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (provider) DO UPDATE SET sealed = excluded.sealed, key_hint = excluded.key_hint, base_url = excluded.base_url, updated_at = excluded.updated_at`,
      provider,
      sealed,
      keyHint,
      baseUrl ?? null,
      now,
    );
    return { provider, source: "tenant", keyHint, ...(baseUrl !== undefined && { baseUrl }) };
  }

  delete(provider: string): void {
    this.sql.exec("DELETE FROM provider_keys WHERE provider = ?", provider);
  }

  /** Every key's listing row (never the key); one row per hosted provider at most, so bounded. */
  list(): ProviderKeyInfo[] {
    return this.sql
      .exec<ProviderKeyRow>("SELECT provider, sealed, key_hint, base_url FROM provider_keys ORDER BY provider")
      .toArray()
      .map((row) => ({ provider: row.provider, source: "tenant" as const, keyHint: row.key_hint, ...(row.base_url !== null && { baseUrl: row.base_url }) }));
  }

  /** The plain key and base URL of one provider, or undefined; the row is read before the await. */
  async open(provider: string): Promise<{ apiKey: string; baseUrl?: string } | undefined> {
    const row = this.sql.exec<ProviderKeyRow>("SELECT provider, sealed, key_hint, base_url FROM provider_keys WHERE provider = ?", provider).toArray()[0];
    if (!row) return undefined;
    const apiKey = await openSecret(await secretBoxKey(this.secretsKey, "provider-key"), row.sealed, sealContext(this.tenantId, provider));
    return { apiKey, ...(row.base_url !== null && { baseUrl: row.base_url }) };
  }
}
