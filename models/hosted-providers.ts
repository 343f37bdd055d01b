import type { Provider } from "@earendil-works/pi-ai/models";
import { anthropicProvider } from "@earendil-works/pi-ai/providers/anthropic";
import { cloudflareAIGatewayProvider } from "@earendil-works/pi-ai/providers/cloudflare-ai-gateway";
import { cloudflareWorkersAIProvider } from "@earendil-works/pi-ai/providers/cloudflare-workers-ai";
import { deepseekProvider } from "@earendil-works/pi-ai/providers/deepseek";
import { googleProvider } from "@earendil-works/pi-ai/providers/google";
import { groqProvider } from "@earendil-works/pi-ai/providers/groq";
import { mistralProvider } from "@earendil-works/pi-ai/providers/mistral";
import { openaiProvider } from "@earendil-works/pi-ai/providers/openai";
import { openrouterProvider } from "@earendil-works/pi-ai/providers/openrouter";
import { xaiProvider } from "@earendil-works/pi-ai/providers/xai";
import { anthropicBatch } from "./deferred/anthropic-batch.ts";
import { openaiBackground } from "./deferred/openai-background.ts";
import { withDeferredResponses } from "./deferred/provider.ts";

// The hosted providers this service offers (ARCHITECTURE D9), each pi-ai's own factory imported by
// subpath: the bundle carries these catalogs and their API implementations and nothing else.
// Which provider costs what in the bundle is measured in bench/README.md.

export interface HostedProvider {
  id: string;
  create: () => Provider;
  /**
   * The deployment secrets that configure it (all of them must be set). pi-ai's own auth reads
   * them through the registry's auth context, so these are pi-ai's variable names.
   */
  deploymentSecrets: readonly string[];
}

export const HOSTED_PROVIDERS: readonly HostedProvider[] = [
  // Background responses and message batches for deferred runs (deferred/): pi-ai streams these
  // two but does not defer them yet.
  { id: "openai", create: () => withDeferredResponses(openaiProvider(), openaiBackground), deploymentSecrets: ["OPENAI_API_KEY"] },
  { id: "anthropic", create: () => withDeferredResponses(anthropicProvider(), anthropicBatch), deploymentSecrets: ["ANTHROPIC_API_KEY"] },
  { id: "google", create: googleProvider, deploymentSecrets: ["GEMINI_API_KEY"] },
  { id: "mistral", create: mistralProvider, deploymentSecrets: ["MISTRAL_API_KEY"] },
  { id: "groq", create: groqProvider, deploymentSecrets: ["GROQ_API_KEY"] },
  { id: "xai", create: xaiProvider, deploymentSecrets: ["XAI_API_KEY"] },
  { id: "deepseek", create: deepseekProvider, deploymentSecrets: ["DEEPSEEK_API_KEY"] },
  { id: "openrouter", create: openrouterProvider, deploymentSecrets: ["OPENROUTER_API_KEY"] },
  // Also served keyless through the Workers AI binding `AI` when the deployment has one (workers-ai.ts).
  { id: "cloudflare-workers-ai", create: cloudflareWorkersAIProvider, deploymentSecrets: ["CLOUDFLARE_API_KEY", "CLOUDFLARE_ACCOUNT_ID"] },
  { id: "cloudflare-ai-gateway", create: cloudflareAIGatewayProvider, deploymentSecrets: ["CLOUDFLARE_API_KEY", "CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_GATEWAY_ID"] },
];

export const WORKERS_AI = "cloudflare-workers-ai";

export function hostedProvider(id: string): HostedProvider | undefined {
  return HOSTED_PROVIDERS.find((provider) => provider.id === id);
}
