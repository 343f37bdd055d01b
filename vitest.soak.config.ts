import { defineConfig } from "vitest/config";

// `npm run soak` (test/soak/soak.mjs): the chaos run against `npm start` in Node, apart from
// `npm test`. One long test; its own bound comes from the options (kills, duration).
export default defineConfig({
  test: {
    include: ["test/soak/**/*.soak.test.ts"],
    testTimeout: 3_600_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
