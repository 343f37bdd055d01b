import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import type { TestProject } from "vitest/node";
import type { BundleSize } from "../report.ts";

/**
 * Global setup of `npm run bench` (Node): builds the deploy bundle exactly as a deployment does
 * (`wrangler deploy --dry-run`, nothing is uploaded) and measures it for QUALITY P10.
 */
export default function setup(project: TestProject): void {
  const outdir = mkdtempSync(join(tmpdir(), "das-bundle-"));
  try {
    const output = execFileSync("npx", ["wrangler", "deploy", "--dry-run", "--outdir", outdir], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "true" } });
    const files = walk(outdir).filter((file) => !file.endsWith(".map") && !file.endsWith("README.md"));
    let uploadBytes = 0;
    let gzipBytes = 0;
    for (const file of files) {
      const bytes = readFileSync(file);
      uploadBytes += bytes.byteLength;
      gzipBytes += gzipSync(bytes, { level: 9 }).byteLength;
    }
    const wranglerLine = /Total Upload:[^\n]*/.exec(output)?.[0]?.trim() ?? "(wrangler printed no total)";
    const measured: BundleSize = { uploadBytes, gzipBytes, modules: files.length, wranglerLine };
    project.provide("bundleSize", measured);
  } catch (error) {
    project.provide("bundleSize", { error: error instanceof Error ? error.message.slice(0, 500) : String(error) });
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}
