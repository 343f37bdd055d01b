import { workersPool } from "../vitest.workers.ts";
import { defineConfig } from "vitest/config";
import TableReporter from "./node/table-reporter.ts";

// `npm run bench`: the QUALITY.md performance rows, measured in workerd with the same pool, worker
// and wrangler.toml as the tests, printed as tables by TableReporter. Benches never fail on speed;
// they assert only that what they read is correct. The root config includes only test/**.
export default defineConfig({
  plugins: [
    workersPool(),
  ],
  test: {
    include: ["bench/**/*.bench-test.ts"],
    // P10 measures the deploy bundle in Node before the workerd rows run (bench/node/bundle-size.ts).
    globalSetup: ["./bench/node/bundle-size.ts"],
    // One file at a time: the rows must not compete for the machine's cores.
    fileParallelism: false,
    testTimeout: 150_000,
    hookTimeout: 150_000,
    reporters: ["default", new TableReporter()],
  },
});
