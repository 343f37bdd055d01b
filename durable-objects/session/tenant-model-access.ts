import type { ModelsPort } from "../../harness/execution/models.ts";
import type { Session } from "../../harness/session/session.ts";
import type { ModelIdentity } from "../../schema/lane.ts";
import { fromWire } from "../../schema/wire.ts";
import { modelsDeployment, usableProviders } from "../../models/deployment.ts";
import { createModelRegistry } from "../../models/registry.ts";
import { SessionScriptSource } from "../../models/scripted/script-source.ts";
import { tenantModels, type TenantProviderGrant } from "../../models/tenant-models.ts";

/** What the tenant holds for models now: the providers it can use and its default model of new lanes. */
export interface TenantModelSettings {
  usableProviders: Set<string>;
  defaultModel: ModelIdentity | null;
}

/**
 * The session's way to the models its tenant may use: pi-ai's registry with the deployment's
 * configuration, and the tenant's credentials and defaults asked of the tenant's object when they
 * are needed (never stored here: a key lives in memory for one request). `tenantId` is read each
 * time, from the session's own storage (undefined once the session is gone).
 */
export class TenantModelAccess {
  constructor(
    private readonly env: Env,
    private readonly tenantId: () => string | undefined,
  ) {}

  /** The session's Models port; each hosted request's credentials are asked for when it starts. */
  port(session: Session): ModelsPort {
    const deployment = modelsDeployment(this.env);
    const registry = createModelRegistry({ scripted: deployment.scripted, secret: deployment.secret, scriptSource: () => new SessionScriptSource(session) });
    return tenantModels(registry, { deployment, grant: (provider) => this.providerGrant(provider) });
  }

  /**
   * The providers the tenant can use now (its keys, the deployment's when allowed, scripted) and
   * its default model of new lanes. Asked per check: keys and defaults change without this object
   * knowing. `tenantId` is given by a creation, before the session's storage exists.
   */
  async settings(tenantId = this.tenantId()): Promise<TenantModelSettings> {
    const deployment = modelsDeployment(this.env);
    const none = { keys: [], deploymentKeys: false, defaultModel: null };
    const reply = tenantId === undefined ? undefined : fromWire(await this.env.TENANTS.getByName(tenantId).providerSettings());
    const settings = reply?.ok ? reply.value : none;
    return { usableProviders: usableProviders(deployment, settings), defaultModel: settings.defaultModel };
  }

  private async providerGrant(provider: string): Promise<TenantProviderGrant> {
    const tenantId = this.tenantId();
    return tenantId === undefined ? { deploymentKeys: false } : this.env.TENANTS.getByName(tenantId).providerGrant(provider);
  }
}
