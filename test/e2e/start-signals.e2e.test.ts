import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LOCK_FILE } from "../../scripts/state-lock.mjs";
import { freePort } from "./dev-server.ts";

// `npm start` is the documented entry point, and stopping it the ordinary way stops the server:
// one SIGTERM to the process it started (`kill <pid>`, child_process.kill(), an IDE's stop button
// that signals the npm process). npm passes that signal only to the `sh -c` running the script,
// which ends without passing it on; scripts/start.mjs notices that the process that started it is
// gone and stops wrangler (and with it workerd), so nothing is left serving the port or holding
// the state directory (its lock is removed).

const alive = (pgid: number) => {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("stopping npm start with SIGTERM to the npm process", () => {
  let child: ChildProcess | undefined;
  const persistDir = mkdtempSync(join(tmpdir(), "das-signals-"));
  let output = "";
  afterAll(async () => {
    // Everything this test started is in one process group: end whatever is left of it.
    if (child?.pid !== undefined && alive(child.pid)) {
      process.kill(-child.pid, "SIGKILL");
      for (let i = 0; i < 100 && alive(child.pid); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    rmSync(persistDir, { recursive: true, force: true });
  });

  it("stops the server, leaves no wrangler/workerd process behind and releases the state directory", async () => {
    const port = await freePort();
    child = spawn("npm", ["start", "--", "--port", String(port), "--persist-to", persistDir], { detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "true" } });
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const base = `http://127.0.0.1:${port}`;
    let up = false;
    for (let i = 0; i < 360 && !up; i++) {
      up = await fetch(`${base}/health`).then((response) => response.ok, () => false);
      if (!up) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(up, output).toBe(true);
    expect(existsSync(join(persistDir, LOCK_FILE))).toBe(true);
    const npmPid = child.pid ?? 0;
    const exited = new Promise<void>((resolve) => child?.once("exit", () => resolve()));

    process.kill(npmPid, "SIGTERM");
    await exited;
    // Give the rest the same bound dev-server.ts gives a group to end.
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && alive(npmPid)) await new Promise((resolve) => setTimeout(resolve, 100));

    const stillServing = await fetch(`${base}/health`).then((response) => response.ok, () => false);
    expect({ stillServing, processesLeft: alive(npmPid), lockLeft: existsSync(join(persistDir, LOCK_FILE)) }, output).toEqual({
      stillServing: false,
      processesLeft: false,
      lockLeft: false,
    });
  }, 120_000);
});
