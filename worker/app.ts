import { Hono } from "hono";
import { requestId } from "hono/request-id";
import type { AppEnv } from "./env.ts";
import { errorResponse, HttpFailure } from "./http-error.ts";
import { adminRoutes } from "./routes/admin.ts";
import { sessionRoutes } from "./routes/sessions.ts";
import { tenantRoutes } from "./routes/tenant.ts";

export type { AppEnv };

/**
 * The front worker (ARCHITECTURE §2): request ids, authentication, validation before any object is
 * touched, and the one place engine and edge errors become HTTP statuses (D16).
 */
export function createApp(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use(requestId());
  app.get("/health", (c) => c.json({ status: "ok" }));
  app.route("/v1/admin", adminRoutes);
  app.route("/v1/sessions", sessionRoutes);
  app.route("/v1", tenantRoutes);
  app.notFound((c) => errorResponse(c, { code: "NotFound", message: "No such route" }));
  app.onError((error, c) => {
    if (error instanceof HttpFailure) return errorResponse(c, error.error);
    console.error(JSON.stringify({ requestId: c.get("requestId"), error: error instanceof Error ? error.stack ?? error.message : String(error) }));
    return errorResponse(c, { code: "Internal", message: "Internal error" });
  });
  return app;
}
