import { Hono } from "hono";
import type { AppEnv } from "../env.ts";
import { DOCS_HTML } from "../openapi/docs-page.ts";
import { openApiDocument } from "../openapi/document.ts";

/**
 * The page may run its own inline script and fetch this origin's document; nothing else. No page
 * may frame it (clickjacking): `frame-ancestors 'none'`, and `X-Frame-Options: DENY` for browsers
 * that predate it; the same headers as the Inspector's (scripts/build-inspector.mjs).
 */
const DOCS_HEADERS = {
  "Content-Security-Policy":
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "X-Content-Type-Options": "nosniff",
};

/** `GET /openapi.json` (generated from the route catalog, built once per isolate) and `GET /docs`. */
export const docsRoutes = new Hono<AppEnv>()
  .get("/openapi.json", (c) => c.json(openApiDocument()))
  .get("/docs", (c) => c.html(DOCS_HTML, 200, DOCS_HEADERS));
