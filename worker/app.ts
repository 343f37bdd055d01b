import { Hono } from "hono";
import { allowedMethods } from "./allowed-methods.ts";
import type { AppEnv } from "./env.ts";
import { errorResponse, HttpFailure, requestIdsOf } from "./http-error.ts";
import { corsFromEnv } from "./middleware/cors.ts";
import { requestIds } from "./middleware/request-id.ts";
import { smallAnswersUncompressed } from "./middleware/small-answers.ts";
import { platformFailure } from "../durable-objects/rpc/platform-errors.ts";
import { adminRoutes } from "./routes/admin.ts";
import { agentRoutes } from "./routes/agents.ts";
import { branchRoutes } from "./routes/branches.ts";
import { browserTokenRoutes } from "./routes/browser-tokens.ts";
import { dataRoutes } from "./routes/data.ts";
import { docsRoutes } from "./routes/docs.ts";
import { inspectorRoutes } from "./routes/inspector.ts";
import { laneRoutes } from "./routes/lanes.ts";
import { mcpServerRoutes } from "./routes/mcp-servers.ts";
import { entryRoutes, usageRoutes } from "./routes/session-entries.ts";
import { listRoutes, valueRoutes } from "./routes/session-values.ts";
import { providerRoutes } from "./routes/providers.ts";
import { resourceRoutes } from "./routes/resources.ts";
import { laneScheduleRoutes, tenantScheduleRoutes } from "./routes/schedules.ts";
import { sessionRoutes } from "./routes/sessions.ts";
import { sessionDeletionRoutes } from "./routes/session-deletion.ts";
import { tenantDeletionRoutes } from "./routes/tenant-deletion.ts";
import { tenantRoutes } from "./routes/tenant.ts";
import { toolRoutes } from "./routes/tools.ts";
import { tenantToolRoutes } from "./routes/tenant-tools.ts";
import { watchRoutes } from "./routes/watch.ts";
import { webhookRoutes } from "./routes/webhooks.ts";

export type { AppEnv };

/**
 * The front worker (ARCHITECTURE §2): request ids, authentication, validation before any object is
 * touched, and the one place engine and edge errors become HTTP statuses (D16).
 */
export function createApp(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use(requestIds);
  app.use(smallAnswersUncompressed);
  app.use("/v1/*", corsFromEnv());
  app.get("/health", (c) => c.json({ status: "ok" }));
  // GET /openapi.json and GET /docs (no authentication), generated from worker/openapi/catalog.ts.
  app.route("/", docsRoutes);
  // GET /inspector and its script and style (no authentication: the page asks for a key).
  app.route("/", inspectorRoutes);
  app.route("/v1/admin", adminRoutes);
  app.route("/v1/admin", tenantDeletionRoutes);
  // WebSocket upgrades (…/watch) first: they answer 101 without reaching later middleware.
  app.route("/v1/sessions", watchRoutes);
  // Before the session routers, whose middleware would authenticate these twice (docs/data.md).
  app.route("/v1", dataRoutes);
  // Before /v1/sessions: its wildcard middleware would otherwise authenticate lane requests twice.
  app.route("/v1/sessions/:sid/lanes", laneScheduleRoutes);
  app.route("/v1/sessions/:sid/lanes", laneRoutes);
  app.route("/v1/sessions/:sid/branches", branchRoutes);
  app.route("/v1/sessions/:sid/entries", entryRoutes);
  app.route("/v1/sessions/:sid/usage", usageRoutes);
  app.route("/v1/sessions/:sid/values", valueRoutes);
  app.route("/v1/sessions/:sid/lists", listRoutes);
  app.route("/v1/sessions/:sid/tools", toolRoutes);
  app.route("/v1/sessions/:sid/mcp-servers", mcpServerRoutes);
  app.route("/v1/sessions/:sid/tokens", browserTokenRoutes);
  app.route("/v1/sessions/:sid", resourceRoutes);
  app.route("/v1/sessions", sessionDeletionRoutes);
  app.route("/v1/sessions", sessionRoutes);
  app.route("/v1", tenantRoutes);
  app.route("/v1", providerRoutes);
  app.route("/v1", webhookRoutes);
  app.route("/v1", agentRoutes);
  app.route("/v1", tenantToolRoutes);
  app.route("/v1", tenantScheduleRoutes);
  const allowed = allowedMethods(app);
  app.notFound((c) => {
    const allow = allowed(c.req.path);
    if (allow.length === 0) return errorResponse(c, { code: "NotFound", message: "No such route" });
    const response = errorResponse(c, { code: "MethodNotAllowed", message: `${c.req.method} is not served here; use ${allow.join(", ")}`, details: { allow } });
    response.headers.set("Allow", allow.join(", "));
    return response;
  });
  app.onError((error, c) => {
    if (error instanceof HttpFailure) return errorResponse(c, error.error);
    const platform = platformFailure(error);
    if (platform) {
      console.warn(JSON.stringify({ ...requestIdsOf(c), platformError: error instanceof Error ? error.message : String(error) }));
      return errorResponse(c, platform);
    }
    console.error(JSON.stringify({ ...requestIdsOf(c), error: error instanceof Error ? error.stack ?? error.message : String(error) }));
    return errorResponse(c, { code: "Internal", message: "Internal error" });
  });
  return app;
}
