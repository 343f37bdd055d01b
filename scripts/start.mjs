#!/usr/bin/env node
// `npm start [-- <wrangler dev flags>] [-- --dev-key]`: serves the API locally with `wrangler dev`
// and local persistence under .wrangler/state, so state (and interrupted runs) survive a restart of
// this process. Any flag the script sets by default (--port, --ip, --persist-to, …) can be passed
// to override it. `--dev-key` also prints a ready API key of a local tenant "dev" once the server is up.
// The minute cron (resuming deferred runs) is fired every minute, which wrangler dev does not do;
// `--no-cron` leaves it to be fired by hand (wrangler's /cdn-cgi/local/scheduled endpoint).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { wranglerDevArgs } from "./dev-args.mjs";
import { devVar, devVarsProblems, ensureDevVars } from "./dev-vars.mjs";
import { startLocalCron } from "./local-cron.mjs";

const OWN_FLAGS = ["--dev-key", "--no-cron"];
const devKey = process.argv.includes("--dev-key");
const cron = !process.argv.includes("--no-cron");
const devVars = ".dev.vars";

// The admin token is a secret; locally wrangler reads it (and the local settings) from .dev.vars.
const added = ensureDevVars(devVars);
if (added.length > 0) console.log(`Added to ${devVars} (local only, never committed):\n\n${added.map((line) => `  ${line}`).join("\n")}\n`);
const problems = devVarsProblems(readFileSync(devVars, "utf8"));
const warn = () => problems.forEach((problem) => console.warn(`\nWarning: ${problem}\n`));
warn();

const { args, port } = wranglerDevArgs(process.argv.slice(2).filter((arg) => !OWN_FLAGS.includes(arg)));
const child = spawn("wrangler", args, { stdio: "inherit", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
const base = `http://127.0.0.1:${port}`;
if (cron) startLocalCron(base);
void whenUp(base).then((up) => {
  if (!up) return;
  // wrangler has just said that scheduled Workers are not triggered locally: here they are.
  if (cron) console.log(`npm start fires the minute cron (it resumes deferred runs) at the start of every minute; --no-cron turns that off.`);
  // Said again once wrangler's own start-up lines have scrolled the first one away.
  warn();
  if (devKey && problems.length === 0) return printDevKey(base);
});

/** Waits (up to a minute) for /health to answer. */
async function whenUp(base) {
  for (let attempt = 0; attempt < 240; attempt++) {
    try {
      if ((await fetch(`${base}/health`)).ok) return true;
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

/** Makes sure tenant "dev" exists, and prints a fresh key for it. */
async function printDevKey(base) {
  const token = devVar(readFileSync(devVars, "utf8"), "ADMIN_TOKEN");
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const tenant = await fetch(`${base}/v1/admin/tenants`, { method: "POST", headers, body: JSON.stringify({ id: "dev", name: "Local development" }) });
  if (tenant.status !== 201 && tenant.status !== 409) return console.error(`Could not create the dev tenant: ${tenant.status}`);
  const key = await fetch(`${base}/v1/admin/tenants/dev/keys`, { method: "POST", headers, body: JSON.stringify({ name: "npm start --dev-key" }) });
  const body = await key.json();
  console.log(`\nA key of the local tenant "dev" (shown once):\n\n  export KEY=${body.key}\n  curl -s ${base}/v1/me -H "authorization: Bearer $KEY"\n\nThe Inspector (paste the key there): ${base}/inspector\n`);
}
child.on("exit", (code, signal) => process.exit(signal ? 1 : (code ?? 0)));
