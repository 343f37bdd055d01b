import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import type { AppEnv } from "../env.ts";

/**
 * CORS for browser clients, configured by the `CORS_ORIGINS` variable: a comma-separated list of
 * allowed origins, `*` for any, empty or absent for none (server-to-server use needs no CORS).
 */
export function corsFromEnv(): MiddlewareHandler<AppEnv> {
  return (c, next) => {
    const configured: string = c.env.CORS_ORIGINS ?? "";
    const allowed = configured.split(",").map((entry) => entry.trim()).filter(Boolean);
    return cors({
      origin: (origin) => (allowed.includes("*") ? origin || "*" : allowed.includes(origin) ? origin : null),
      // Every request header the API reads from a client: a page may send its own request id, and a
      // fetch-based SSE reader resumes with Last-Event-ID.
      allowHeaders: ["authorization", "content-type", "idempotency-key", "x-request-id", "last-event-id"],
      allowMethods: ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
      // `allow` names the methods a 405 answer offers.
      exposeHeaders: ["x-request-id", "idempotency-replayed", "retry-after", "allow"],
      maxAge: 600,
    })(c, next);
  };
}
