#!/usr/bin/env node
// `npm test`'s end-to-end step: the e2e files one at a time (each starts `npm start` of its own),
// except the files that spend their time waiting for wall-clock minutes (a schedule's due times,
// the minute cron), which run beside them: they add almost no load, and waiting for them in line
// would add minutes to every run. Their output is printed after the main run's, and the step
// fails if either run fails.
import { spawn } from "node:child_process";

/** E2E files that mostly wait for minute boundaries. */
const WAITING_FILES = ["test/e2e/schedules.e2e.test.ts"];
const CONFIG = ["--config", "vitest.e2e.config.ts"];

function vitest(args, inherit) {
  const child = spawn("npx", ["vitest", "run", ...CONFIG, ...args], { stdio: inherit ? "inherit" : ["ignore", "pipe", "pipe"] });
  let output = "";
  if (!inherit) {
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
  }
  return new Promise((resolve) => child.on("close", (code) => resolve({ code: code ?? 1, output })));
}

const beside = vitest(WAITING_FILES, false);
const main = await vitest(WAITING_FILES.flatMap((file) => ["--exclude", file]), true);
const waited = await beside;
process.stdout.write(`\n--- e2e files run beside the others (${WAITING_FILES.join(", ")}) ---\n${waited.output}`);
process.exit(main.code !== 0 ? main.code : waited.code);
