import type { AiBinding } from "@earendil-works/pi-ai/api/cloudflare-ai-binding";
import { HOSTED_PROVIDERS, WORKERS_AI } from "./hosted-providers.ts";

/**
 * What the deployment itself brings to the models: its secrets (provider keys such as
 * `OPENAI_API_KEY`, read by name), an optional Workers AI binding `AI`, whether the scripted
 * models are on, and whether this is local development (`LOCAL_DEV=on`, written by `npm start`
 * into `.dev.vars`, never deployed), which lets a tenant point a provider at a loopback http host
 * (schema/egress-policy.ts).
 */
export interface ModelsDeployment {
  scripted: boolean;
  secret(name: string): string | undefined;
  aiBinding: AiBinding | undefined;
  localDev: boolean;
}

/** The deployment's view from the Worker environment (secrets and vars are plain strings on it). */
export function modelsDeployment(env: object): ModelsDeployment {
  const read = (name: string): string | undefined => {
    const value: unknown = Reflect.get(env, name);
    return typeof value === "string" && value.trim().length > 0 ? value : undefined;
  };
  const ai: unknown = Reflect.get(env, "AI");
  return { scripted: read("SCRIPTED_MODELS") === "on", secret: read, aiBinding: isAiBinding(ai) ? ai : undefined, localDev: read("LOCAL_DEV") === "on" };
}

function isAiBinding(value: unknown): value is AiBinding {
  return typeof value === "object" && value !== null && "aiGatewayLogId" in value && typeof Reflect.get(value, "fetch") === "function";
}

/** The hosted providers the deployment's own secrets (or its AI binding) configure. */
export function deploymentProviders(deployment: ModelsDeployment): string[] {
  return HOSTED_PROVIDERS.filter(
    (provider) =>
      provider.deploymentSecrets.every((name) => deployment.secret(name) !== undefined) ||
      (provider.id === WORKERS_AI && deployment.aiBinding !== undefined),
  ).map((provider) => provider.id);
}

/** What a tenant holds for its providers (the TenantObject's answer). */
export interface TenantProviderHoldings {
  keys: readonly { provider: string }[];
  deploymentKeys: boolean;
}

/**
 * The providers a tenant can use now: those it has a key for, the deployment's own when it may
 * use them, and the scripted models when the deployment offers them.
 */
export function usableProviders(deployment: ModelsDeployment, holdings: TenantProviderHoldings): Set<string> {
  const usable = new Set(holdings.keys.map((key) => key.provider));
  if (holdings.deploymentKeys) for (const provider of deploymentProviders(deployment)) usable.add(provider);
  if (deployment.scripted) usable.add("scripted");
  return usable;
}
