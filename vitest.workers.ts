import { cloudflareTest } from "@cloudflare/vitest-plugin";

/**
 * The workerd pool shared by the tests and the benches: the real worker, wrangler.toml, a fixed
 * admin token (a secret, in .dev.vars locally) so a clean clone runs without one, and the local
 * settings `npm start` writes to .dev.vars (wrangler.toml ships the deployment defaults: scripted
 * models off, no CORS), so the suite does not depend on a .dev.vars file.
 */
export const workersPool = () =>
  cloudflareTest({
    main: "./worker/index.ts",
    wrangler: { configPath: "./wrangler.toml" },
    miniflare: { compatibilityFlags: ["service_binding_extra_handlers"], bindings: { ADMIN_TOKEN: "test-admin-token", SECRETS_KEY: "test-secrets-key-of-at-least-32-characters", SCRIPTED_MODELS: "on", CORS_ORIGINS: "*", ALLOW_LOOPBACK_URLS: "on" } },
  });
