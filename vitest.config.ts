import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Tests run inside workerd against real Durable Object SQLite storage, real alarms and the real
// Hono app. Storage is isolated per test file; tests name their objects uniquely.
export default defineConfig({
  plugins: [
    cloudflareTest({
      main: "./worker/index.ts",
      wrangler: { configPath: "./wrangler.toml" },
      // The admin token is a secret (.dev.vars locally); tests use a fixed one so a clean clone runs.
      miniflare: { compatibilityFlags: ["service_binding_extra_handlers"], bindings: { ADMIN_TOKEN: "test-admin-token" } },
    }),
  ],
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/e2e/**"],
  },
});
