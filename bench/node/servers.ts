import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, startDevServer, type DevServer } from "../../test/e2e/dev-server.ts";
import { runtimeUrl } from "./runtime-url.ts";

// The servers of the server rows (P1, P3 retained, throughput, P7–P9, P14, memory), started once
// per bench run by bench/node/server-setup.ts: ours as a user runs it (`npm start`, with the flags
// below), the Agents SDK peer with `wrangler dev --config bench/peer/wrangler.toml`, and P14's
// floor (bench/sse-floor/). All bind loopback only, persist to fresh temporary directories, and run
// with wrangler's local observability (request tracing) off, because it adds a per-request cost to
// whichever server it is on. All log at `warn` for the same reason (`npm start -- --log-level warn`,
// a flag any user may pass): at the default `info`, wrangler's dev proxy reports every HTTP request
// to the wrangler process for its `[wrangler:info] POST … 200 OK` line, about 1 ms of CPU a request
// on this machine's two cores, which our HTTP turns would pay, the peer's socket frames never do,
// and no deployment pays.

const READY_TIMEOUT_MS = 120_000;

/** wrangler dev's local tracing/observability, off for every server (X_LOCAL_OBSERVABILITY). */
export const SERVER_ENV = { X_LOCAL_OBSERVABILITY: "false", X_LOCAL_EXPLORER: "false", WRANGLER_SEND_METRICS: "false" };

/** wrangler dev's log level, `warn` for every server (no line, and no report, per HTTP request). */
export const SERVER_ARGS = ["--log-level", "warn"];

export interface RunningServer {
  /** wrangler dev's port, as users reach the server: its reload proxy, which forwards to the runtime. */
  baseUrl: string;
  /** The runtime's own listener past that proxy (runtime-url.ts), or `baseUrl` when not found. */
  runtimeUrl: string;
  persistDir: string;
  /** The process group (npm or npx, wrangler, workerd). */
  pgid: number;
  stop(): Promise<void>;
}

export async function startOurs(): Promise<RunningServer> {
  // startDevServer spawns with the current environment; the settings reach wrangler through it.
  Object.assign(process.env, SERVER_ENV);
  const server: DevServer = await startDevServer({ timeoutMs: READY_TIMEOUT_MS, extraArgs: SERVER_ARGS });
  const pgid = processGroupOf(server.persistDir);
  const runtime = (await runtimeUrl(pgid, server.baseUrl, "/health")) ?? server.baseUrl;
  return { baseUrl: server.baseUrl, runtimeUrl: runtime, persistDir: server.persistDir, pgid, stop: server.stop };
}

export function startPeer(persistDir: string): Promise<RunningServer> {
  return startWorker("the peer", "bench/peer/wrangler.toml", persistDir);
}

/** The floor of P14 (bench/sse-floor/): one object's event to 500 clients with no product code. */
export function startSseFloor(persistDir: string): Promise<RunningServer> {
  return startWorker("the SSE floor", "bench/sse-floor/wrangler.toml", persistDir);
}

/** `wrangler dev --config <config>` on a free loopback port, ready once the worker answers anything. */
async function startWorker(name: string, config: string, persistDir: string): Promise<RunningServer> {
  const port = await freePort();
  const args = ["wrangler", "dev", "--config", config, "--port", String(port), "--ip", "127.0.0.1", "--persist-to", persistDir, "--show-interactive-dev-session=false", ...SERVER_ARGS];
  const child = spawn("npx", args, { stdio: ["ignore", "pipe", "pipe"], detached: true, env: { ...process.env, ...SERVER_ENV, CI: "true" } });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const pgid = child.pid;
  if (pgid === undefined) throw new Error(`could not spawn ${name}`);
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async () => {
    try {
      process.kill(-pgid, "SIGTERM");
    } catch {
      return;
    }
    for (let i = 0; i < 100; i++) {
      try {
        process.kill(-pgid, 0);
      } catch {
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited early:\n${output}`);
    try {
      // Any answer from the worker means it is up (the route is unknown on purpose).
      await fetch(`${baseUrl}/ready`);
      return { baseUrl, runtimeUrl: (await runtimeUrl(pgid, baseUrl, "/ready")) ?? baseUrl, persistDir, pgid, stop };
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  await stop();
  throw new Error(`${name} did not answer in time:\n${output}`);
}

/** The process group of `npm start`: startDevServer spawns it detached (its own group), with our persist directory. */
function processGroupOf(persistDir: string): number {
  for (const pid of numericEntries("/proc")) {
    try {
      if (readFileSync(join("/proc", pid, "cmdline"), "utf8").split("\0").includes(persistDir)) return statFields(pid).pgrp;
    } catch {
      // the process ended meanwhile
    }
  }
  throw new Error(`no process of the server persisting to ${persistDir}`);
}

/** The resident memory (bytes) of the workerd processes in process group `pgid` (Linux /proc). */
export function workerdResidentBytes(pgid: number): number {
  let total = 0;
  for (const pid of numericEntries("/proc")) {
    try {
      const { comm, pgrp } = statFields(pid);
      if (pgrp !== pgid || comm !== "workerd") continue;
      const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(join("/proc", pid, "status"), "utf8"))?.[1];
      total += Number(rss ?? 0) * 1024;
    } catch {
      // the process ended meanwhile
    }
  }
  return total;
}

/** `/proc/<pid>/stat`: the command name (in parentheses, may hold spaces) and the process group. */
function statFields(pid: string): { comm: string; pgrp: number } {
  const stat = readFileSync(join("/proc", pid, "stat"), "utf8");
  const open = stat.indexOf("(");
  const close = stat.lastIndexOf(")");
  const rest = stat.slice(close + 2).split(" ");
  return { comm: stat.slice(open + 1, close), pgrp: Number(rest[2]) };
}

function numericEntries(dir: string): string[] {
  return readdirSync(dir).filter((name) => /^\d+$/.test(name));
}
