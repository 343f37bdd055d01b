import { Hono, type Context } from "hono";
import page from "../../dist/inspector-page.json";
import type { AppEnv } from "../env.ts";

/**
 * The page loads only its own files and talks only to this origin (REST and the watch socket); no
 * page may frame it (clickjacking): `frame-ancestors 'none'`, and `X-Frame-Options` for browsers
 * that predate it (as /docs).
 */
const INSPECTOR_HEADERS = {
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "X-Content-Type-Options": "nosniff",
  // Revalidated on every load (304 while the build is the same), so a new deployment shows at once.
  "Cache-Control": "no-cache",
  ETag: page.etag,
};

/**
 * Whether an If-None-Match header names this build (RFC 9110 §13.1.2): `*`, or a list of entity
 * tags compared weakly, since the edge turns the strong ETag into `W/"…"` when it compresses the
 * answer and the browser revalidates with that form.
 */
function namesThisBuild(header: string | undefined): boolean {
  if (header === undefined) return false;
  if (header.trim() === "*") return true;
  for (const [, opaque] of header.matchAll(/(?:W\/)?("[^"]*")/g)) if (opaque === page.etag) return true;
  return false;
}

function served(c: Context<AppEnv>, body: string, contentType: string): Response {
  const headers = { ...INSPECTOR_HEADERS, "Content-Type": contentType };
  if (namesThisBuild(c.req.header("if-none-match"))) return c.body(null, 304, headers);
  return c.body(body, 200, headers);
}

/**
 * The Inspector page (docs/inspector.md), built by scripts/build-inspector.mjs into one JSON
 * document the worker bundles. Served by the worker itself rather than as static assets: with
 * assets, every request (the API's included) first passes the platform's asset router, a Worker of
 * its own in front of this one, which under `wrangler dev` cost about 0.7 ms of CPU and latency per
 * API request (bench/README.md), for a page of three files.
 */
export const inspectorRoutes = new Hono<AppEnv>()
  .get("/inspector", (c) => served(c, page.html, "text/html; charset=utf-8"))
  .get("/inspector/inspector.js", (c) => served(c, page.js, "text/javascript; charset=utf-8"))
  .get("/inspector/inspector.css", (c) => served(c, page.css, "text/css; charset=utf-8"));
