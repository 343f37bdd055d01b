import { defineConfig } from "vitest/config";

// End-to-end tests run in Node and talk to `npm start` (wrangler dev) over HTTP and WebSocket,
// as a client would.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.e2e.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two files at once: each starts its own server on its own port and persistence directory (the
    // Inspector build they share writes each file in one step: scripts/build-inspector.mjs), and
    // most of an e2e file is waiting on its server, not computing.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
