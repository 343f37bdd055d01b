#!/usr/bin/env node
// `npm start [-- <wrangler dev flags>] [-- --dev-key]`: serves the API locally with `wrangler dev`
// and local persistence under .wrangler/state, so state (and interrupted runs) survive a restart of
// this process. Any flag the script sets by default (--port, --ip, --persist-to, …) can be passed
// to override it. `--dev-key` also prints a ready API key of a local tenant "dev" (`--dev-tenant
// <id>`: of that tenant) once the server is up.
// The minute cron (resuming deferred runs) is fired every minute, which wrangler dev does not do;
// `--no-cron` leaves it to be fired by hand (wrangler's /cdn-cgi/local/scheduled endpoint).
//
// Before wrangler starts: one npm start per state directory (a lock file there, scripts/state-lock.mjs),
// and the port must be free (else the script's requests would reach the server already there).
// It stops wrangler when it is signalled, and when the process that started it is gone (npm passes
// a SIGTERM only to the `sh -c` that runs this script, which ends without passing it on).
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { listenAddress, localBase, localProtocol, persistDir, splitOwnFlags, wranglerDevArgs } from "./dev-args.mjs";
import { devVar, devVarsProblems, ensureDevVars } from "./dev-vars.mjs";
import { startLocalCron } from "./local-cron.mjs";
import { recordServer, takeStateLock } from "./state-lock.mjs";

const devVars = ".dev.vars";
/** How long the server may take to answer /health before the script says so (it keeps waiting). */
const UP_WARNING_MS = 60_000;

let own;
try {
  own = splitOwnFlags(process.argv.slice(2));
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}
const { devKey, devTenant, cron, rest: userArgs } = own;

// The admin token is a secret; locally wrangler reads it (and the local settings) from .dev.vars.
const added = ensureDevVars(devVars);
if (added.length > 0) console.log(`Added to ${devVars} (local only, never committed):\n\n${added.map((line) => `  ${line}`).join("\n")}\n`);
const devVarsText = readFileSync(devVars, "utf8");
const problems = devVarsProblems(devVarsText);
const warn = () => problems.forEach((problem) => console.warn(`\nWarning: ${problem}\n`));
warn();

const { args, port } = wranglerDevArgs(userArgs);
const base = localBase(userArgs);
const stateDir = persistDir(userArgs);

let lock;
try {
  lock = takeStateLock(stateDir, { url: base });
} catch (error) {
  // The directory cannot be made or written (a file in its path, no permission): said in one line.
  fail(`The state directory ${stateDir} cannot be used: ${error instanceof Error ? error.message : String(error)}. Pass another one: npm start -- --persist-to <dir>.`);
}
if (!lock.taken) {
  const { pid, url, server } = lock.holder;
  const who = server?.pid === undefined ? `pid ${pid}` : `pid ${pid}, its server pid ${server.pid}`;
  fail(
    `The state directory ${stateDir} is already in use by another npm start${pid === undefined ? "" : ` (${who}${url ? `, serving ${url}` : ""})`}. ` +
      "Two servers on one state directory would each run their own copy of the same sessions. Stop that one first, " +
      `or start this one on another state directory: npm start -- --persist-to <dir>. (The lock: ${lock.path}; once its process has ended, the next start takes it over.)`,
  );
}
process.on("exit", () => lock.release());

const address = listenAddress(userArgs);
if (!(await portFree(address, port))) {
  fail(
    `Port ${port} on ${address}: Address already in use. Another server (an earlier npm start?) is listening there; ` +
      "stop it, or pass another port: npm start -- --port <n>.",
  );
}

// In this script's process group, so that whoever kills the group (a terminal's Ctrl-C, a test
// that crashes the server on purpose) kills wrangler and workerd with it.
const child = spawn("wrangler", args, { stdio: "inherit", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });
let exited = false;
child.on("error", (error) => {
  const hint = "code" in error && error.code === "ENOENT" ? " (run it with npm start, which puts wrangler on the PATH)" : "";
  console.error(`Could not start wrangler: ${error.message}${hint}`);
  process.exit(1);
});
// The lock names the server too: should this script be killed outright (SIGKILL), the server it
// leaves running still holds the state directory, and the next start says so.
if (child.pid !== undefined) recordServer(lock.path, child.pid);
// wrangler serves https with a certificate of its own making: this script's own requests (the
// health check, the cron, --dev-key) go to it alone, so they accept that certificate. Set after
// wrangler started, so its environment is left as it was.
if (localProtocol(userArgs) === "https") process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0";
child.on("exit", (code, signal) => {
  exited = true;
  process.exit(signal ? 1 : (code ?? 0));
});

let stopping = false;
/**
 * Passes `signal` on to wrangler (which stops workerd); if it has not ended 10 s after the first,
 * SIGKILL to every process this script started and theirs: killing wrangler alone would leave the
 * workerd it started serving the port and the state directory.
 */
function stop(signal) {
  if (!stopping) {
    stopping = true;
    setTimeout(() => {
      for (const pid of descendants(process.pid)) tryKill(pid);
      child.kill("SIGKILL");
    }, 10_000).unref();
  }
  child.kill(signal);
}

/** Every process below `root` (Linux: from /proc; elsewhere none are found, and wrangler alone is killed). */
function descendants(root) {
  const children = new Map();
  let entries = [];
  try {
    entries = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  for (const name of entries) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // The fields after the command (which may hold spaces and parentheses): the parent is field 4.
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(name)]);
    } catch {
      // Ended meanwhile.
    }
  }
  const found = [];
  for (let queue = [root]; queue.length > 0; ) {
    const next = children.get(queue.shift()) ?? [];
    found.push(...next);
    queue.push(...next);
  }
  return found;
}

function tryKill(pid) {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => stop(signal));
// The process that started this one (npm's `sh -c`) is gone: whoever stopped `npm start` meant
// the server too.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent && !stopping) {
    console.error("\nnpm start: the process that started this script has ended; stopping the server.");
    stop("SIGTERM");
  }
}, 250).unref();

if (cron) startLocalCron(base);
whenUp(base)
  .then(async (up) => {
    if (!up) return;
    // wrangler has just said that scheduled Workers are not triggered locally: here they are.
    if (cron) console.log(`npm start fires the minute cron (it resumes deferred runs) at the start of every minute; --no-cron turns that off.`);
    // Said again once wrangler's own start-up lines have scrolled the first one away.
    warn();
    if (devKey && problems.length === 0) await printDevKey(base, devTenant);
  })
  .catch((error) => console.error(`\nnpm start: ${error instanceof Error ? error.message : String(error)}\n`));

/** Waits for /health to answer, for as long as wrangler runs; says so when that takes longer than a minute. */
async function whenUp(base) {
  const started = Date.now();
  let warned = false;
  while (!exited && !stopping) {
    try {
      if ((await fetch(`${base}/health`, { signal: AbortSignal.timeout(10_000) })).ok) return true;
    } catch {
      // not up yet
    }
    if (!warned && Date.now() - started > UP_WARNING_MS) {
      warned = true;
      console.warn(
        `\nWarning: ${base}/health has not answered for ${UP_WARNING_MS / 1000} s. Still waiting: the minute cron fires and ` +
          `${devKey ? "--dev-key prints its key " : "the server is usable "}once it answers. If wrangler serves another address, pass it with --ip.\n`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, warned ? 1000 : 250));
  }
  return false;
}

/** Makes sure local tenant `tenant` exists, and prints a fresh key for it (or why there is none). */
async function printDevKey(base, tenant) {
  const token = devVar(readFileSync(devVars, "utf8"), "ADMIN_TOKEN");
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const created = await fetch(`${base}/v1/admin/tenants`, { method: "POST", headers, body: JSON.stringify({ id: tenant, name: "Local development" }) });
  const createdBody = await created.json().catch(() => undefined);
  if (created.status === 409) {
    // TenantExists: the tenant is there, or it was deleted and its id stays reserved.
    const status = createdBody?.error?.details?.status;
    if (status === "deleting" || status === "deleted") {
      return console.error(
        `\nCould not print a dev key: the local tenant "${tenant}" was deleted, and a deleted tenant's id stays reserved. ` +
          `Name another tenant (npm start -- --dev-key --dev-tenant <id>), or start on a fresh state directory (npm start -- --persist-to <dir> --dev-key).\n`,
      );
    }
  } else if (created.status !== 201) {
    return console.error(`\nCould not create the local tenant "${tenant}": ${created.status} ${describe(createdBody)}\n`);
  }
  const key = await fetch(`${base}/v1/admin/tenants/${encodeURIComponent(tenant)}/keys`, { method: "POST", headers, body: JSON.stringify({ name: "npm start --dev-key" }) });
  const body = await key.json().catch(() => undefined);
  if (key.status !== 201 || typeof body?.key !== "string") {
    return console.error(`\nCould not create a key of the local tenant "${tenant}": ${key.status} ${describe(body)}\n`);
  }
  console.log(`\nA key of the local tenant "${tenant}" (shown once):\n\n  export KEY=${body.key}\n  curl -s ${base}/v1/me -H "authorization: Bearer $KEY"\n\nThe Inspector (paste the key there): ${base}/inspector\n`);
}

/** An error answer's message, for a line of output. */
function describe(body) {
  return body?.error?.message ?? (body === undefined ? "(no JSON answer)" : JSON.stringify(body));
}

/** Whether `port` on `host` can be listened on now (any error other than "in use" is left to wrangler to report). */
function portFree(host, port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", (error) => resolve(!("code" in error && error.code === "EADDRINUSE")));
    server.listen({ host, port: Number(port), exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** Prints `message` and ends the script (exit code 1) before wrangler was started. */
function fail(message) {
  console.error(`\nnpm start: ${message}\n`);
  process.exit(1);
}
