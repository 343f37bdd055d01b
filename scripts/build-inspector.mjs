#!/usr/bin/env node
// Builds the Inspector page (inspector/) into dist/inspector-page.json, which the worker imports
// and serves (worker/routes/inspector.ts): the page's HTML and CSS as they are, its TypeScript
// bundled and minified by esbuild (the bundler wrangler itself uses). wrangler runs this before
// `wrangler dev` (so before `npm start`) and before `wrangler deploy`, through [build] in
// wrangler.toml, and the test and bench configurations run it before the worker is loaded
// (vitest.workers.ts); nothing it writes is committed.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist");

// Several `npm start` may build at once (the end-to-end tests start servers side by side): the
// file is written under a name of this process and renamed over its place, which replaces it in
// one step, so no server ever reads a half-written file.
function put(relative, contents) {
  const target = join(out, relative);
  mkdirSync(dirname(target), { recursive: true });
  const temporary = `${target}.${process.pid}.tmp`;
  writeFileSync(temporary, contents);
  renameSync(temporary, target);
}

// The page's three files in one JSON document, which the worker imports and serves
// (worker/routes/inspector.ts): the HTML at /inspector, the script and style under /inspector/.
const bundled = await build({
  entryPoints: [join(root, "inspector", "main.ts")],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  sourcemap: false,
  legalComments: "none",
  logLevel: "warning",
  write: false,
});
const files = {
  html: readFileSync(join(root, "inspector", "index.html"), "utf8"),
  css: readFileSync(join(root, "inspector", "inspector.css"), "utf8"),
  js: bundled.outputFiles[0].text,
};
// One validator for the three files: a browser revalidates each and gets 304 until a new build.
const etag = `"${createHash("sha256").update(JSON.stringify(files)).digest("base64url").slice(0, 22)}"`;
put("inspector-page.json", JSON.stringify({ ...files, etag }));
