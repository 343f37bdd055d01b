import { workersPool } from "./vitest.workers.ts";
import { defineConfig } from "vitest/config";

// Tests run inside workerd against real Durable Object SQLite storage, real alarms and the real
// Hono app. Tests name their objects uniquely.
export default defineConfig({
  plugins: [
    workersPool(),
  ],
  test: {
    include: ["test/**/*.test.ts"],
    // test/soak: `npm run soak` only (vitest.soak.config.ts), never part of `npm test`.
    exclude: ["test/e2e/**", "test/soak/**"],
    // A file's first request loads and transforms the whole worker (the model providers' SDKs
    // included) in a fresh isolate: seconds on a loaded 2-core machine. Timing is never asserted.
    testTimeout: 30_000,
    // Two files at once even on a 2-core machine: a file spends much of its time waiting (its
    // isolate's first load, loopback servers, alarms), so the default of one fewer than the cores
    // (one, on CI's 2 cores) leaves a core idle; measured ~20 % less wall time over 30 files.
    maxWorkers: 2,
    // Files share their worker's modules instead of loading the whole worker into a fresh isolate
    // each: that load was about 80 % of the suite's time (205 files: 831 s → 170 s, measured).
    // Tests name their objects uniquely and undo what they patch, so no file sees another's state.
    isolate: false,
    hookTimeout: 30_000,
    // `expect.poll` waits for something to happen; vitest's 1 s default is a timing assumption a
    // loaded machine can break. The bound is how long to wait, never what is asserted.
    expect: { poll: { timeout: 10_000 } },
    // Files share one runtime (isolate: false above), so work a file left running in it (an
    // object's safety-net alarm, a background forward) can still be loading a module lazily when
    // vitest closes that runner at the end: it rejects the pending module request with
    // EnvironmentTeardownError. That is the runner shutting down under background work, after every
    // test of the file has finished and been counted, not a failure of any test: it alone is not
    // reported. Every other unhandled error still fails the run.
    onUnhandledError: (error) => error.name !== "EnvironmentTeardownError",
    // A real local webhook for the http tool tests, a tenant's webhook receiver and a real MCP
    // server for the MCP tests, and the egress tests' tripwire and fixtures (Node side; see
    // test/node/tool-webhook-setup.ts, test/node/webhook-receiver-setup.ts,
    // test/node/mcp-server-setup.ts and test/node/egress-fixtures-setup.ts).
    globalSetup: ["./test/node/tool-webhook-setup.ts", "./test/node/webhook-receiver-setup.ts", "./test/node/mcp-server-setup.ts", "./test/node/egress-fixtures-setup.ts"],
  },
});
