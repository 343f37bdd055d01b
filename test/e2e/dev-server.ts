import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

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
  output: () => string;
  stop: () => Promise<void>;
}

/**
 * Starts the service exactly as a user does (`npm start -- --port <n>`), with its own persistence
 * directory, and waits until GET /health answers.
 */
export async function startDevServer(options: { persistDir?: string; timeoutMs?: number } = {}): Promise<DevServer> {
  const port = await freePort();
  const persistDir = options.persistDir ?? mkdtempSync(join(tmpdir(), "das-e2e-"));
  let output = "";
  const child: ChildProcess = spawn("npm", ["start", "--", "--port", String(port), "--persist-to", persistDir], {
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
    env: { ...process.env, CI: "true" },
  });
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.pid === undefined) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    process.kill(-child.pid, "SIGTERM");
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
    if (child.exitCode === null) process.kill(-child.pid, "SIGKILL");
  };
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`npm start exited early:\n${output}`);
    try {
      const response = await fetch(`${baseUrl}/health`);
      if (response.ok) return { baseUrl, persistDir, output: () => output, stop };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  await stop();
  throw new Error(`npm start did not answer /health in time:\n${output}`);
}
