import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";

/**
 * The fenced code blocks of a Markdown file in the repository whose info string starts with
 * `language` (```sh, ```ts …), in document order: the tests run the docs' own text, so the docs
 * and the tests cannot drift apart.
 */
export function fencedBlocks(repoPath: string, language: string): string[] {
  const markdown = readFileSync(new URL(`../../${repoPath}`, import.meta.url), "utf8");
  const blocks: string[] = [];
  for (const match of markdown.matchAll(/^```([^\n]*)\n([\s\S]*?)^```[ \t]*$/gm)) {
    if (match[1]?.trim().split(/\s+/)[0] === language) blocks.push(match[2] ?? "");
  }
  return blocks;
}

/** The JSON values curl printed back to back (curl adds no newline), in order. */
export function jsonValues(text: string): unknown[] {
  const values: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === "\\") i++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === "{") {
      if (depth++ === 0) start = i;
    } else if (char === "}" && --depth === 0) values.push(JSON.parse(text.slice(start, i + 1)));
  }
  return values;
}

/**
 * Runs a doc's `sh` blocks as a user would: exactly as written, in order, in one bash (so a
 * variable set in one block is seen by the next) with `BASE` and `KEY` exported as docs/api.md
 * sets them, and `vars` as the doc says to set them. Answers each block's output, trimmed.
 */
export async function runShellBlocks(blocks: readonly string[], env: { baseUrl: string; key: string; vars?: Record<string, string> }): Promise<string[]> {
  const script = blocks.map((block, index) => `echo "@@block ${index}"\n${block}\necho`).join("\n");
  // Variables a doc says to set first (its session's id as SID, …), as the reader would export them.
  const exports = Object.entries(env.vars ?? {}).map(([name, value]) => `export ${name}=${value}\n`).join("");
  const { stdout } = await run("bash", ["-c", `set -euo pipefail\nexport BASE=${env.baseUrl}\nexport KEY=${env.key}\n${exports}${script}`], { cwd: repo, timeout: 60_000 });
  return stdout.split(/^@@block \d+$/m).slice(1).map((output) => output.trim());
}

const run = promisify(execFile);
const repo = fileURLToPath(new URL("../../", import.meta.url));

/** A doc's block running on its own, as in a terminal of its own (a server, a stream). */
export interface RunningBlock {
  /** What it printed to stdout so far. */
  stdout: () => string;
  /** What it printed to stderr so far. */
  stderr: () => string;
  /** Waits until stdout and stderr together match `pattern` (bounded); answers stdout. */
  until: (pattern: RegExp, timeoutMs?: number) => Promise<string>;
  /** Ends it as Ctrl-C would (SIGINT to its process group, then SIGKILL if it lingers); answers stdout. */
  stop: () => Promise<string>;
}

/**
 * Starts a doc's block that does not end by itself (`npm start`, `curl -N` on a stream) as a user
 * does in a terminal of its own: exactly as written, in bash, with `BASE`, `KEY` and `vars` exported
 * as {@link runShellBlocks} exports them, in `cwd` (the repository by default). The text is not
 * changed: the bound is outside it, `stop()` (or `timeoutMs`, 90 s by default, after which it is
 * stopped whatever it does).
 */
export function startShellBlock(block: string, env: { baseUrl: string; key: string; vars?: Record<string, string>; cwd?: string; timeoutMs?: number }): RunningBlock {
  const exports = Object.entries(env.vars ?? {}).map(([name, value]) => `export ${name}=${value}\n`).join("");
  const child = spawn("bash", ["-c", `set -euo pipefail\nexport BASE=${env.baseUrl}\nexport KEY=${env.key}\n${exports}${block}`], {
    cwd: env.cwd ?? repo,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const group = child.pid;
  const alive = () => {
    if (group === undefined) return false;
    try {
      process.kill(-group, 0);
      return true;
    } catch {
      return false;
    }
  };
  const signal = (name: NodeJS.Signals) => {
    if (group !== undefined && alive()) process.kill(-group, name);
  };
  let stopping: Promise<string> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      signal("SIGINT");
      // The whole group (a server's children too) is gone before stop answers, so the next start on
      // the same port or state never races it.
      for (const deadline = Date.now() + 15_000; alive() && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 100));
      signal("SIGKILL");
      await exited;
      clearTimeout(bound);
      return stdout;
    })());
  const bound = setTimeout(() => void stop(), env.timeoutMs ?? 90_000);
  bound.unref();
  const until = async (pattern: RegExp, timeoutMs = 30_000) => {
    for (const deadline = Date.now() + timeoutMs; !pattern.test(stdout + stderr); ) {
      if (Date.now() > deadline || child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`The block did not print ${pattern} (${child.exitCode ?? child.signalCode ?? "still running"}):\n${stdout}\n${stderr}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return stdout;
  };
  return { stdout: () => stdout, stderr: () => stderr, until, stop };
}

/**
 * The first `js` block of a doc, imported as a module (written to a temporary `.mjs` first): a test
 * calls the doc's own code (a signature check) rather than a copy of it. `T`: what the doc exports.
 */
export async function importDocModule<T>(repoPath: string): Promise<T> {
  const [block] = fencedBlocks(repoPath, "js");
  if (!block) throw new Error(`${repoPath} has no js block`);
  const dir = mkdtempSync(join(tmpdir(), "das-doc-module-"));
  const file = join(dir, "module.mjs");
  writeFileSync(file, block);
  try {
    const loaded: T = await import(/* @vite-ignore */ pathToFileURL(file).href);
    return loaded;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
