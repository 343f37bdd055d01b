import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { persistDir } from "../../scripts/dev-args.mjs";
import { LOCK_FILE, readLock, recordServer, releaseStateLock, takeStateLock } from "../../scripts/state-lock.mjs";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// One `npm start` per state directory (README, "State survives restarts"). A second wrangler/workerd
// on the same --persist-to directory would run its own live instance of the same Durable Objects:
// the two would disagree about a lane's branch and a session's tree would fork silently. So
// npm start takes a lock file (its pid and the URL it serves) in the state directory before it
// starts wrangler, and a second start there exits at once, saying which process holds it. A lock
// whose process has ended (npm start was killed) is stale and taken over by the next start.

describe("a second npm start on a state directory already in use", () => {
  const persistDir = mkdtempSync(join(tmpdir(), "das-state-lock-"));
  const servers: DevServer[] = [];
  printServerOutputOnFailure(() => servers);
  afterAll(async () => {
    for (const server of servers) await server.stop();
    rmSync(persistDir, { recursive: true, force: true });
  });

  it("exits, naming the npm start that holds it; once that one has stopped, a start there serves", async () => {
    const first = await startDevServer({ persistDir });
    servers.push(first);
    const lock = readLock(join(persistDir, LOCK_FILE));
    expect(lock).toMatchObject({ pid: expect.any(Number), url: first.baseUrl });

    const refused = await startDevServer({ persistDir }).then(
      (second) => {
        servers.push(second);
        return "served";
      },
      (error: unknown) => String(error),
    );
    expect(refused).toMatch(/exited early[\s\S]*The state directory .* is already in use by another npm start \(pid \d+, its server pid \d+, serving http:\/\/127\.0\.0\.1:\d+\)/);
    expect(refused).toContain("--persist-to <dir>");

    // Stopped, the first start removes its lock: the next one takes the directory.
    await first.stop();
    expect(existsSync(join(persistDir, LOCK_FILE))).toBe(false);
    const next = await startDevServer({ persistDir });
    servers.push(next);
    expect((await fetch(`${next.baseUrl}/health`)).status).toBe(200);
  }, 180_000);
});

describe("the state lock", () => {
  let dir: string | undefined;
  let holder: ChildProcess | undefined;
  const stateDir = () => (dir ??= mkdtempSync(join(tmpdir(), "das-lock-")));
  afterEach(() => {
    holder?.kill("SIGKILL");
    holder = undefined;
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  /** A lock as another, still running process wrote it: that process's pid and start time. */
  async function lockOfLiveProcess(): Promise<{ pid: number; procStart: string | undefined }> {
    holder = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    await new Promise((resolve) => holder?.once("spawn", resolve));
    const pid = holder.pid ?? 0;
    const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, "utf8") : undefined;
    return { pid, procStart: stat?.slice(stat.lastIndexOf(")") + 2).split(" ")[19] };
  }

  it("is in the state directory wrangler is given: --persist-to, or .wrangler/state", () => {
    expect(persistDir([])).toBe(".wrangler/state");
    expect(persistDir(["--persist-to=/tmp/x"])).toBe("/tmp/x");
    expect(persistDir(["--persist-to", "/tmp/y"])).toBe("/tmp/y");
  });

  it("is taken in a directory it creates, and released only by its holder", () => {
    const path = join(stateDir(), "state", LOCK_FILE);
    const taken = takeStateLock(join(stateDir(), "state"), { url: "http://127.0.0.1:1" });
    expect(taken).toMatchObject({ taken: true, path });
    expect(readLock(path)).toMatchObject({ pid: process.pid, url: "http://127.0.0.1:1" });
    if (taken.taken) taken.release();
    expect(existsSync(path)).toBe(false);

    writeFileSync(path, JSON.stringify({ pid: process.pid + 1 }));
    releaseStateLock(path);
    expect(existsSync(path)).toBe(true);
  });

  it("is refused while the process that holds it runs", async () => {
    const live = await lockOfLiveProcess();
    const path = join(stateDir(), LOCK_FILE);
    writeFileSync(path, JSON.stringify({ ...live, url: "http://127.0.0.1:2" }));
    expect(takeStateLock(stateDir())).toEqual({ taken: false, path, holder: { ...live, url: "http://127.0.0.1:2" } });
    expect(readLock(path)?.pid).toBe(live.pid);
  });

  it("is refused while the server its holder started runs, also once the holder itself was killed", async () => {
    const path = join(stateDir(), LOCK_FILE);
    const ended = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    await new Promise((resolve) => ended.once("exit", resolve));
    // npm start killed outright (SIGKILL): its pid is gone, the wrangler it started still serves.
    const server = await lockOfLiveProcess();
    writeFileSync(path, JSON.stringify({ pid: ended.pid, server }));
    expect(takeStateLock(stateDir())).toMatchObject({ taken: false, holder: { pid: ended.pid, server } });
    // The server ended too: the lock is stale and taken over.
    holder?.kill("SIGKILL");
    await new Promise((resolve) => holder?.once("exit", resolve));
    expect(takeStateLock(stateDir())).toMatchObject({ taken: true });
  });

  it("names the server once npm start records it", () => {
    const taken = takeStateLock(stateDir());
    if (!taken.taken) throw new Error("the lock must be free");
    recordServer(taken.path, process.pid);
    expect(readLock(taken.path)).toMatchObject({ pid: process.pid, server: { pid: process.pid } });
    taken.release();
  });

  it("is taken over when the process that held it has ended, or its pid now names another process", async () => {
    const path = join(stateDir(), LOCK_FILE);
    const ended = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    await new Promise((resolve) => ended.once("exit", resolve));
    writeFileSync(path, JSON.stringify({ pid: ended.pid }));
    expect(takeStateLock(stateDir())).toMatchObject({ taken: true });
    expect(readLock(path)?.pid).toBe(process.pid);

    // A live pid that started at another time than the lock says (Linux): the pid came round again.
    const live = await lockOfLiveProcess();
    if (live.procStart !== undefined) {
      writeFileSync(path, JSON.stringify({ pid: live.pid, procStart: "1" }));
      expect(takeStateLock(stateDir())).toMatchObject({ taken: true });
    }
    // Unreadable: no process can be holding it.
    writeFileSync(path, "not a lock");
    expect(takeStateLock(stateDir())).toMatchObject({ taken: true });
  });
});
