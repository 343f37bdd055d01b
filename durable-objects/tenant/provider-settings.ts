import * as v from "valibot";
import type { RpcResult } from "../../schema/errors.ts";
import type { Wire } from "../../schema/wire.ts";
import type { ProviderKeyInfo } from "../../schema/providers.ts";
import { ModelIdentitySchema, type ModelIdentity } from "../../schema/lane.ts";
import type { TenantProviderGrant } from "../../models/tenant-models.ts";
import { SecretBoxError, SecretsKeyMissing } from "../../secrets/secret-box.ts";
import { asResult } from "../rpc/rpc-errors.ts";
import { TenantProviderKeys } from "./tenant-providers.ts";
import type { TenantHost } from "./tenant-host.ts";

/** What a tenant holds for its providers: its own keys (listing rows) and the deployment-keys permission. */
export interface TenantProviderSettings {
  keys: ProviderKeyInfo[];
  deploymentKeys: boolean;
  /** The model of new lanes that name none, unless their session has a default of its own. */
  defaultModel: ModelIdentity | null;
}

/**
 * The tenant's provider settings (bring your own key, tenant-providers.ts): its sealed provider
 * keys, its default model, and the credentials of one provider request for its own sessions.
 */
export class ProviderSettings {
  constructor(private readonly host: TenantHost) {}

  /** Stores (or replaces) the tenant's key for `provider`; the answer never holds the key. */
  async putProviderKey(provider: string, apiKey: string, baseUrl: string | undefined): Promise<Wire<RpcResult<ProviderKeyInfo>>> {
    return asResult(async () => {
      const tenant = this.host.requireActiveTenant();
      const keys = this.providerKeys(tenant.id);
      const sealed = await keys.seal(provider, apiKey);
      // The seal is awaited before the SQL turn: the tenant is read again in the writing turn.
      this.host.requireActiveTenant();
      return keys.write(provider, sealed, apiKey, baseUrl, Date.now());
    });
  }

  async deleteProviderKey(provider: string): Promise<Wire<RpcResult<{ deleted: true }>>> {
    return asResult(() => {
      this.providerKeys(this.host.requireTenant().id).delete(provider);
      return { deleted: true as const };
    });
  }

  async providerSettings(): Promise<Wire<RpcResult<TenantProviderSettings>>> {
    return asResult(() => {
      const tenant = this.host.requireTenant();
      return { keys: this.providerKeys(tenant.id).list(), deploymentKeys: this.host.quotas().deploymentKeys, defaultModel: this.defaultModel() };
    });
  }

  /**
   * Sets (or, with null, removes) the tenant's default model. The caller checked that the tenant
   * can use it; a lane creation checks again, since keys come and go.
   */
  async setDefaultModel(model: ModelIdentity | null): Promise<Wire<RpcResult<{ defaultModel: ModelIdentity | null }>>> {
    return asResult(() => {
      this.host.requireActiveTenant();
      const stored = model && { provider: model.provider, modelId: model.modelId };
      this.host.sql.exec("UPDATE tenant SET default_model = ? WHERE singleton = 1", stored ? JSON.stringify(stored) : null);
      return { defaultModel: stored };
    });
  }

  private defaultModel(): ModelIdentity | null {
    const row = this.host.sql.exec<{ default_model: string | null }>("SELECT default_model FROM tenant WHERE singleton = 1").toArray()[0];
    if (!row?.default_model) return null;
    const parsed = v.safeParse(ModelIdentitySchema, JSON.parse(row.default_model));
    return parsed.success ? parsed.output : null;
  }

  /**
   * One provider request's credentials, asked by the tenant's own session objects only (the RPC
   * is not reachable from the API): the plain key, held by the caller for that request alone.
   */
  async providerGrant(provider: string): Promise<TenantProviderGrant> {
    const tenant = this.host.tenant();
    if (!tenant) return { deploymentKeys: false };
    const deploymentKeys = this.host.quotas().deploymentKeys;
    try {
      const key = await this.providerKeys(tenant.id).open(provider);
      return { ...(key && { key }), deploymentKeys };
    } catch (error) {
      if (!(error instanceof SecretBoxError)) throw error;
      return { unreadableKey: unreadableKeyReason(provider, error), deploymentKeys };
    }
  }

  private providerKeys(tenantId: string): TenantProviderKeys {
    return new TenantProviderKeys(this.host.sql, this.host.env.SECRETS_KEY, tenantId);
  }
}

/**
 * Why a stored provider key did not open, for the run that needed it (docs/security.md: a changed
 * SECRETS_KEY makes every sealed secret unreadable, and tenants put their keys again). A missing
 * SECRETS_KEY is the operator's to fix, and its problem is already worded for users; any other
 * failure to open says only what the tenant can do about it, never how the seal failed.
 */
function unreadableKeyReason(provider: string, error: SecretBoxError): string {
  if (error instanceof SecretsKeyMissing) return `The stored API key for provider ${provider} cannot be opened: ${error.message}`;
  return `The stored API key for provider ${provider} no longer opens (the service's SECRETS_KEY changed since it was stored); put it again with PUT /v1/providers/${provider}`;
}
