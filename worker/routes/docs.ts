import { Hono } from "hono";
import type { AppEnv } from "../env.ts";
import { DOCS_HTML } from "../openapi/docs-page.ts";
import { openApiDocument } from "../openapi/document.ts";

/** The page may run its own inline script and fetch this origin's document; nothing else. */
const DOCS_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'";

/** `GET /openapi.json` (generated from the route catalog, built once per isolate) and `GET /docs`. */
export const docsRoutes = new Hono<AppEnv>()
  .get("/openapi.json", (c) => c.json(openApiDocument()))
  .get("/docs", (c) => c.html(DOCS_HTML, 200, { "Content-Security-Policy": DOCS_CSP }));
