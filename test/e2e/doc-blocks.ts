import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
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
