// One `npm start` per state directory. Two wrangler/workerd processes on one --persist-to
// directory would each run their own live instance of the same Durable Objects (a lane's branch
// splits between them, silently), so `npm start` takes a lock file there before it starts wrangler
// and removes it when it exits. The file names the process that holds it and where it serves; a
// lock whose process is gone (npm start was killed, the machine restarted) is stale and taken over.
import { linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

/** The lock's name inside the state directory. */
export const LOCK_FILE = "npm-start.lock";

/**
 * Takes the lock of state directory `dir` (created when missing) for this process, with `info`
 * (e.g. the URL it serves) written into it. Returns `{ taken: true, path, release }`, or
 * `{ taken: false, path, holder }` while another live process holds it (`holder`: what it wrote).
 */
export function takeStateLock(dir, info = {}) {
  mkdirSync(dir, { recursive: true });
  const path = join(resolve(dir), LOCK_FILE);
  const mine = { pid: process.pid, procStart: procStart(process.pid), ...info, since: new Date().toISOString() };
  // Written in full under a name of this process, then linked into place: linking fails when the
  // lock exists, and a reader never sees a half-written lock.
  const draft = `${path}.${process.pid}.tmp`;
  writeFileSync(draft, `${JSON.stringify(mine)}\n`);
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(draft, path);
        return { taken: true, path, release: () => releaseStateLock(path) };
      } catch (error) {
        if (!(error instanceof Error && "code" in error && error.code === "EEXIST")) throw error;
      }
      const holder = readLock(path);
      if (holder !== undefined && holderAlive(holder)) return { taken: false, path, holder };
      // Stale: moved aside in one step and dropped. Another start that judged the same stale lock
      // may have taken its place meanwhile: what was moved is then that start's live lock, and is
      // put back.
      const aside = `${path}.${process.pid}.stale`;
      try {
        renameSync(path, aside);
        const moved = readLock(aside);
        if (moved !== undefined && moved.pid !== holder?.pid && holderAlive(moved)) linkSync(aside, path);
      } catch {
        // another process took it over first: look again
      }
      rmSync(aside, { force: true });
    }
    const holder = readLock(path);
    return { taken: false, path, holder: holder ?? { pid: undefined } };
  } finally {
    rmSync(draft, { force: true });
  }
}

/**
 * Adds the server this process started (`pid`, the leader of its process group) to the lock at
 * `path`, which this process holds: the lock stays live while either runs, so a server left running
 * by an `npm start` that was killed outright still keeps another start off its state directory.
 */
export function recordServer(path, pid) {
  const lock = readLock(path);
  if (lock?.pid !== process.pid) return;
  const draft = `${path}.${process.pid}.tmp`;
  writeFileSync(draft, `${JSON.stringify({ ...lock, server: { pid, procStart: procStart(pid) } })}\n`);
  renameSync(draft, path);
}

/** Removes the lock at `path` if this process holds it. */
export function releaseStateLock(path) {
  if (readLock(path)?.pid === process.pid) rmSync(path, { force: true });
}

/** The contents of the lock at `path`, or undefined when there is none or it is unreadable. */
export function readLock(path) {
  try {
    const lock = JSON.parse(readFileSync(path, "utf8"));
    return typeof lock === "object" && lock !== null && Number.isInteger(lock.pid) ? lock : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the process that wrote `lock`, or the server it started, still runs. */
function holderAlive(lock) {
  const server = lock.server;
  return processAlive(lock, "start.mjs") || (typeof server === "object" && server !== null && Number.isInteger(server.pid) && processAlive(server, "wrangler"));
}

/** Whether process `pid` (started at `started`) still runs: a pid the system has since given to another process does not. */
function processAlive({ pid, procStart: started }, program) {
  // This process never took that lock: it is an earlier run's whose pid has come round again.
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: alive, another user's.
    return error instanceof Error && "code" in error && error.code === "EPERM";
  }
  // Linux: the same pid started at another time, or running another program, is another process.
  const now = procStart(pid);
  if (started !== undefined && now !== undefined) return started === now;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(program);
  } catch {
    // No /proc (macOS): alive is all that can be told.
    return true;
  }
}

/** When process `pid` started, in clock ticks since boot (Linux's /proc/<pid>/stat), or undefined. */
function procStart(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The fields after the command (which may hold spaces and parentheses): state is field 3, starttime 22.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}
