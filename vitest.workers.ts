import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { execFileSync } from "node:child_process";

/**
 * The workerd pool shared by the tests and the benches: the real worker, wrangler.toml, a fixed
 * admin token (a secret, in .dev.vars locally; at least 32 characters, or the admin routes answer
 * 503 NotConfigured) so a clean clone runs without one, and the local
 * settings `npm start` writes to .dev.vars (wrangler.toml ships the deployment defaults: scripted
 * models off, no CORS), so the suite does not depend on a .dev.vars file. One deployment provider
 * key (OpenAI) is set, so the tests see deployment keys and tenant keys side by side. LOCAL_DEV is
 * on as `npm start` writes it (tests serve http tools from loopback hosts), whatever a local
 * .dev.vars says. The egress policy with it off is tested on the policy itself
 * (test/schema/egress-policy.test.ts), through the Models port (test/models/provider-egress.test.ts)
 * and against `npm start` (test/e2e/egress.e2e.test.ts).
 */
/** A deployment provider key (a secret in a deployment): tests see the deployment's keys at work. */
export const DEPLOYMENT_OPENAI_KEY = "sk-deployment-openai-test-key";

/**
 * The worker bundles the Inspector page from dist/inspector-page.json, a build output that wrangler
 * makes before `wrangler dev` and `wrangler deploy` ([build] in wrangler.toml) but the pool does
 * not: built here, once per configuration, before the worker is loaded.
 */
function buildInspectorPage(): void {
  execFileSync(process.execPath, ["scripts/build-inspector.mjs"], { stdio: "inherit" });
}

export const workersPool = () => {
  buildInspectorPage();
  return cloudflareTest({
    main: "./worker/index.ts",
    wrangler: { configPath: "./wrangler.toml" },
    miniflare: { compatibilityFlags: ["service_binding_extra_handlers"], bindings: { ADMIN_TOKEN: "test-admin-token-of-at-least-32-characters", SECRETS_KEY: "test-secrets-key-of-at-least-32-characters", SCRIPTED_MODELS: "on", CORS_ORIGINS: "*", OPENAI_API_KEY: DEPLOYMENT_OPENAI_KEY, LOCAL_DEV: "on" } },
  });
};
