#!/usr/bin/env node
// Builds the Inspector page (inspector/) into dist/inspector-assets, the directory wrangler.toml's
// [assets] serves: the page's HTML and CSS as they are, its TypeScript bundled and minified by
// esbuild (the bundler wrangler itself uses). wrangler runs this before `wrangler dev` (so before
// `npm start`) and before `wrangler deploy`, through [build] in wrangler.toml; nothing it writes
// is committed.
import { build } from "esbuild";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist", "inspector-assets");

// Several `npm start` may build at once (the end-to-end tests start servers side by side): each
// file is written under a name of this process and renamed over its place, which replaces it in
// one step, so no server ever reads a half-written file or a directory another build emptied.
function put(relative, contents) {
  const target = join(out, relative);
  mkdirSync(dirname(target), { recursive: true });
  const temporary = `${target}.${process.pid}.tmp`;
  writeFileSync(temporary, contents);
  renameSync(temporary, target);
}

// Served at /inspector (the platform drops ".html"); the script and style under /inspector/.
put("inspector.html", readFileSync(join(root, "inspector", "index.html")));
put(join("inspector", "inspector.css"), readFileSync(join(root, "inspector", "inspector.css")));
// The page loads only its own files and talks only to this origin (REST and the watch socket).
put(
  "_headers",
  [
    "/inspector*",
    "  Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    // frame-ancestors 'none' above; X-Frame-Options for browsers that predate it (as /docs).
    "  X-Frame-Options: DENY",
    "  Referrer-Policy: no-referrer",
    "  X-Content-Type-Options: nosniff",
    "",
  ].join("\n"),
);
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
put(join("inspector", "inspector.js"), bundled.outputFiles[0].contents);
