import { defineConfig } from "vitest/config";

// End-to-end tests run in Node and talk to `npm start` (wrangler dev) over HTTP and WebSocket,
// as a client would.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.e2e.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // `expect.poll` waits for what a page or a server shows next. Vitest's default of 1 s is a
    // timing assumption a loaded 2-core CI machine broke (the Inspector's pager redraw after
    // 40 row-detail requests): the bound is how long to wait, never what is asserted.
    expect: { poll: { timeout: 15_000 } },
    // Two files at once: each starts its own server on its own port and persistence directory (the
    // Inspector build they share writes each file in one step: scripts/build-inspector.mjs), and
    // most of an e2e file is waiting on its server, not computing.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
