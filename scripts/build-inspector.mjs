#!/usr/bin/env node
// Builds the Inspector page (inspector/) into dist/inspector-assets, the directory wrangler.toml's
// [assets] serves: the page's HTML and CSS as they are, its TypeScript bundled and minified by
// esbuild (the bundler wrangler itself uses). wrangler runs this before `wrangler dev` (so before
// `npm start`) and before `wrangler deploy`, through [build] in wrangler.toml; nothing it writes
// is committed.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist", "inspector-assets");

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, "inspector"), { recursive: true });
// Served at /inspector (the platform drops ".html"); the script and style under /inspector/.
copyFileSync(join(root, "inspector", "index.html"), join(out, "inspector.html"));
copyFileSync(join(root, "inspector", "inspector.css"), join(out, "inspector", "inspector.css"));
// The page loads only its own files and talks only to this origin (REST and the watch socket).
writeFileSync(
  join(out, "_headers"),
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
await build({
  entryPoints: [join(root, "inspector", "main.ts")],
  outfile: join(out, "inspector", "inspector.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  sourcemap: false,
  legalComments: "none",
  logLevel: "warning",
});
