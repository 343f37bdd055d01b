// `npm run soak [-- flags]`: the chaos run of docs/reliability.md ("Chaos under load").
//
//   --short              3 kills, 4 actors, at least 30 s of load (a few minutes in all; for CI)
//   --kills=N            SIGKILLs of the whole `npm start` process group (default 20)
//   --seed=N             the PRNG seed of the workload and the kill schedule (default: random, printed)
//   --duration=S         minimum seconds of load (default 120); the load also lasts until the last kill
//   --concurrency=N      workload actors, one lane each, two lanes per session (default 6)
//   --min-gap-ms=N       shortest pause before a kill, once the server is up (default 3000)
//   --max-gap-ms=N       longest pause (default 12000)
//
// Each flag sets the environment variable the test reads (SOAK_SHORT=1, SOAK_KILLS, SOAK_SEED,
// SOAK_DURATION, SOAK_CONCURRENCY, SOAK_MIN_GAP_MS, SOAK_MAX_GAP_MS), so either form works. The
// run is test/soak/chaos.soak.test.ts under vitest.soak.config.ts; it exits non-zero on any violation.
import { spawn } from "node:child_process";

const FLAGS = {
  kills: "SOAK_KILLS",
  seed: "SOAK_SEED",
  duration: "SOAK_DURATION",
  concurrency: "SOAK_CONCURRENCY",
  "min-gap-ms": "SOAK_MIN_GAP_MS",
  "max-gap-ms": "SOAK_MAX_GAP_MS",
};

const env = { ...process.env };
for (const argument of process.argv.slice(2)) {
  if (argument === "--short") {
    env.SOAK_SHORT = "1";
    continue;
  }
  const match = /^--([a-z-]+)=(\d+)$/.exec(argument);
  const variable = match ? FLAGS[match[1]] : undefined;
  if (!match || !variable) {
    console.error(`npm run soak: unknown argument ${argument} (see the header of test/soak/soak.mjs)`);
    process.exit(2);
  }
  env[variable] = match[2];
}

const child = spawn("npx", ["vitest", "run", "--config", "vitest.soak.config.ts"], { stdio: "inherit", env });
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
