import type { Hono } from "hono";
import type { AppEnv } from "./env.ts";

/** The order `Allow` lists methods in. */
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];

/**
 * The methods each served path answers, read off the app's own route table (middleware, which
 * hono registers as `ALL`, excluded), for the 405 `Allow` header of a known path called with a
 * method it does not serve. `GET` routes answer `HEAD` too (hono serves HEAD from GET).
 */
export function allowedMethods(app: Hono<AppEnv>): (path: string) => string[] {
  let table: { pattern: RegExp; method: string }[] | undefined;
  return (path) => {
    table ??= app.routes
      .filter((route) => METHODS.includes(route.method))
      .map((route) => ({ method: route.method, pattern: new RegExp(`^${route.path.replace(/:[^/]+/g, "[^/]+").replace(/\*/g, ".*")}$`) }));
    const allowed = new Set(table.filter((route) => route.pattern.test(path)).map((route) => route.method));
    if (allowed.has("GET")) allowed.add("HEAD");
    return METHODS.filter((method) => allowed.has(method));
  };
}
