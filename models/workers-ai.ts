import type { Api, FetchFunction, Model, SimpleStreamOptions } from "@earendil-works/pi-ai";
import { CLOUDFLARE_GATEWAY_BINDING_AUTH_SENTINEL, createAiBindingFetch } from "@earendil-works/pi-ai/api/cloudflare-ai-binding";
import type { ModelsDeployment } from "./deployment.ts";
import { WORKERS_AI } from "./hosted-providers.ts";

/**
 * Workers AI through the deployment's `AI` binding, with no Cloudflare API token: pi-ai's own
 * Workers AI provider (OpenAI-compatible chat completions) is pointed at the AI Gateway route the
 * binding serves (`https://workers-binding.ai/ai-gateway/gateways/{gateway}/workers-ai/v1`, the
 * gateway `CLOUDFLARE_GATEWAY_ID` or the account's `default`) and sent through the binding's
 * `fetch` (pi-ai's `createAiBindingFetch`). Binding calls are authenticated by the binding itself;
 * the sentinel only satisfies the API implementation's "some credential" check, and the SDK's
 * placeholder `Authorization` is removed so the gateway never takes it for a provider key.
 * Only used when the deployment has no token of its own for Workers AI.
 */
export function workersAiBindingRequest(model: Model<Api>, deployment: ModelsDeployment): { model: Model<Api>; options: SimpleStreamOptions; fetch: FetchFunction } | undefined {
  if (model.provider !== WORKERS_AI || !deployment.aiBinding) return undefined;
  if (deployment.secret("CLOUDFLARE_API_KEY") && deployment.secret("CLOUDFLARE_ACCOUNT_ID")) return undefined;
  const gateway = encodeURIComponent(deployment.secret("CLOUDFLARE_GATEWAY_ID") ?? "default");
  return {
    model: { ...model, baseUrl: `https://workers-binding.ai/ai-gateway/gateways/${gateway}/workers-ai/v1` },
    options: {
      apiKey: CLOUDFLARE_GATEWAY_BINDING_AUTH_SENTINEL,
      env: { CLOUDFLARE_ACCOUNT_ID: "ai-binding" },
      headers: { "cf-aig-authorization": `Bearer ${CLOUDFLARE_GATEWAY_BINDING_AUTH_SENTINEL}`, Authorization: null },
    },
    fetch: createAiBindingFetch(deployment.aiBinding),
  };
}
