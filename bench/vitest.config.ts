import { workersPool } from "../vitest.workers.ts";
import { defineConfig } from "vitest/config";
import TableReporter from "./node/table-reporter.ts";

// `npm run bench`: the QUALITY.md performance rows, printed as one set of tables by TableReporter.
// Two projects, run one after the other (groupOrder), never side by side:
// - "workerd": bench/*.bench-test.ts inside workerd, with the same pool, worker and wrangler.toml
//   as the tests (P2–P6, P10, P11);
// - "server": bench/node/*.server-bench.ts in Node, driving `npm start` and the Agents SDK peer
//   (bench/peer/) over HTTP and WebSocket (P1, P3 retained, throughput, P7–P9, memory); the servers
//   are started once by bench/node/server-setup.ts.
// Benches never fail on speed; they assert only that what they read is correct. The root config
// includes only test/**, so `npm test` runs none of this.
export default defineConfig({
  test: {
    // One file at a time: the rows must not compete for the machine's cores.
    fileParallelism: false,
    reporters: ["default", new TableReporter()],
    projects: [
      {
        plugins: [workersPool()],
        test: {
          name: "workerd",
          include: ["bench/*.bench-test.ts"],
          // P10 measures the deploy bundle in Node before the workerd rows run (bench/node/bundle-size.ts).
          globalSetup: ["./bench/node/bundle-size.ts"],
          testTimeout: 150_000,
          hookTimeout: 150_000,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: "server",
          include: ["bench/node/*.server-bench.ts"],
          environment: "node",
          globalSetup: ["./bench/node/server-setup.ts"],
          testTimeout: 600_000,
          hookTimeout: 180_000,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
