import { defineConfig } from "vitest/config";

// End-to-end tests run in Node and talk to `npm start` (wrangler dev) over HTTP and WebSocket,
// as a client would.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.e2e.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
