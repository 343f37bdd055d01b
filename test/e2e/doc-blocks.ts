import { readFileSync } from "node:fs";

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
