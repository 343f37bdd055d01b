import { cloudflareTest } from "@cloudflare/vitest-plugin";

/**
 * The workerd pool shared by the tests and the benches: the real worker, wrangler.toml, and a fixed
 * admin token (a secret, in .dev.vars locally) so a clean clone runs without one.
 */
export const workersPool = () =>
  cloudflareTest({
    main: "./worker/index.ts",
    wrangler: { configPath: "./wrangler.toml" },
    miniflare: { compatibilityFlags: ["service_binding_extra_handlers"], bindings: { ADMIN_TOKEN: "test-admin-token" } },
  });
