import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";

/** A free loopback port, as the OS hands it out. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface DevServer {
  baseUrl: string;
  persistDir: string;
  /** The `npm` process's id (the process group's leader). */
  pid: number | undefined;
  output: () => string;
  /** SIGTERM to the process group; removes the persist directory when startDevServer created it. */
  stop: () => Promise<void>;
  /** SIGKILLs the whole process group (npm, wrangler, workerd) at once, as a crash would, and waits (bounded) until none of them is left. */
  kill: () => Promise<void>;
}

/**
 * Starts the service exactly as a user does (`npm start -- --port <n>`), with its own persistence
 * directory and any further flags a user would pass, and waits until GET /health answers. `cwd`:
 * another checkout to start it in (the repo's own by default).
 */
export async function startDevServer(options: StartOptions = {}): Promise<DevServer> {
  // A free port can be taken between asking for it and wrangler binding it (other servers start
  // side by side): such a start is tried again on another port.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (error) {
      if (attempt >= 3 || !(error instanceof Error && /EADDRINUSE|[Aa]ddress already in use/.test(error.message))) throw error;
    }
  }
}

/** `host`: the address the server is reached at (default 127.0.0.1; `[::1]` for `--ip ::1`). */
type StartOptions = { persistDir?: string; timeoutMs?: number; extraArgs?: readonly string[]; cwd?: string; host?: string };

async function startOnce(options: StartOptions): Promise<DevServer> {
  const port = await freePort();
  const persistDir = options.persistDir ?? mkdtempSync(join(tmpdir(), "das-e2e-"));
  let output = "";
  const args = ["start", "--", "--port", String(port), "--persist-to", persistDir, ...(options.extraArgs ?? [])];
  const child: ChildProcess = spawn("npm", args, {
    ...(options.cwd !== undefined && { cwd: options.cwd }),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
    env: { ...process.env, CI: "true" },
  });
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const baseUrl = `http://${options.host ?? "127.0.0.1"}:${port}`;
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  // Both wait (bounded) until no process of the group is left, so a restart on the same persist
  // directory never races the old workerd.
  let gone = false;
  const end = async (signal: NodeJS.Signals) => {
    if (gone || child.pid === undefined) return;
    signalGroup(child.pid, signal);
    gone = await groupGone(child.pid, 5000);
    if (!gone && signal !== "SIGKILL") return end("SIGKILL");
  };
  const stop = async () => {
    await end("SIGTERM");
    if (options.persistDir === undefined) rmSync(persistDir, { recursive: true, force: true });
  };
  const kill = () => end("SIGKILL");
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    if (exited()) {
      await stop();
      throw new Error(`npm start exited early:\n${output}`);
    }
    try {
      const response = await fetch(`${baseUrl}/health`);
      if (response.ok) return { baseUrl, persistDir, pid: child.pid, output: () => output, stop, kill };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  await stop();
  throw new Error(`npm start did not answer /health in time:\n${output}`);
}

/** Whether any process of the group `pgid` is alive (a signal 0 probe). */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits until no process of the group `pgid` is alive (signal 0 probes); false after `timeoutMs`. */
export async function groupGone(pgid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      process.kill(-pgid, 0);
    } catch {
      return true;
    }
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Signals the process group `pgid`; a group that is already gone is not an error. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (error) {
    if (!(error instanceof Error && "code" in error && error.code === "ESRCH")) throw error;
  }
}

/** Prints the tail of each server's output after a failed test (what the server logged is the first clue). */
export function printServerOutputOnFailure(servers: () => (DevServer | undefined)[]): void {
  afterEach((context) => {
    if (context.task.result?.state !== "fail") return;
    for (const server of servers()) {
      if (server) console.error(`--- npm start output (${server.baseUrl}), last 6000 characters ---\n${server.output().slice(-6000)}`);
    }
  });
}
