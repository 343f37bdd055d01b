import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LOCK_FILE } from "../../scripts/state-lock.mjs";
import { groupAlive, groupGone, startDevServer, type DevServer } from "./dev-server.ts";

// `npm start` is the documented entry point, and stopping it the ordinary way stops the server:
// one SIGTERM to the process it started (`kill <pid>`, child_process.kill(), an IDE's stop button
// that signals the npm process). npm passes that signal only to the `sh -c` running the script,
// which ends without passing it on; scripts/start.mjs notices that the process that started it is
// gone and stops wrangler (and with it workerd), so nothing is left serving the port or holding
// the state directory (its lock is removed).

describe("stopping npm start with SIGTERM to the npm process", () => {
  let server: DevServer | undefined;
  const persistDir = mkdtempSync(join(tmpdir(), "das-signals-"));
  afterAll(async () => {
    // Whatever is left of the process group ends here.
    await server?.kill();
    rmSync(persistDir, { recursive: true, force: true });
  });

  it("stops the server, leaves no wrangler/workerd process behind and releases the state directory", async () => {
    server = await startDevServer({ persistDir });
    const { pid } = server;
    expect(existsSync(join(persistDir, LOCK_FILE))).toBe(true);
    if (pid === undefined) throw new Error("npm start has no pid");

    // One SIGTERM to the npm process alone (not its group), as `kill <pid>` sends it.
    process.kill(pid, "SIGTERM");
    // Give the rest the same bound dev-server.ts gives a group to end.
    await groupGone(pid, 10_000);

    await expectAllGone(server, persistDir);
  }, 120_000);
});

/** Nothing of the stopped server is left: no answer on its port, no process of its group, no lock. */
async function expectAllGone({ baseUrl, pid, output }: DevServer, persistDir: string): Promise<void> {
  const stillServing = await fetch(`${baseUrl}/health`).then((response) => response.ok, () => false);
  expect({ stillServing, processesLeft: pid !== undefined && groupAlive(pid), lockLeft: existsSync(join(persistDir, LOCK_FILE)) }, output()).toEqual({
    stillServing: false,
    processesLeft: false,
    lockLeft: false,
  });
}

/** The processes of group `pgid` whose command line holds `text` (Linux's /proc). */
function groupProcesses(pgid: number, text: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // After the command: state, parent, group.
      const group = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
      if (group === pgid && readFileSync(`/proc/${name}/cmdline`, "utf8").includes(text)) found.push(Number(name));
    } catch {
      // Ended meanwhile.
    }
  }
  return found;
}

describe("stopping npm start while wrangler does not stop", () => {
  let server: DevServer | undefined;
  const persistDir = mkdtempSync(join(tmpdir(), "das-stuck-"));
  afterAll(async () => {
    await server?.kill();
    rmSync(persistDir, { recursive: true, force: true });
  });

  it.runIf(existsSync("/proc/self/stat"))("kills wrangler and the workerd it started 10 s after the stop, and releases the state directory", async () => {
    server = await startDevServer({ persistDir });
    const { pid, output } = server;
    if (pid === undefined) throw new Error("npm start has no pid");
    // wrangler's own process, stopped: it can take no signal until it is killed.
    const wrangler = groupProcesses(pid, "wrangler-dist/cli.js");
    expect(wrangler.length, output()).toBeGreaterThan(0);
    for (const stuck of wrangler) process.kill(stuck, "SIGSTOP");

    process.kill(pid, "SIGTERM");
    await groupGone(pid, 30_000);

    await expectAllGone(server, persistDir);
  }, 120_000);
});
