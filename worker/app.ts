import { Hono } from "hono";

export type AppEnv = { Bindings: Env };

/** The front worker's Hono app. Routes of the public API mount here as they are built. */
export function createApp(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get("/health", (c) => c.json({ status: "ok" }));
  app.notFound((c) => c.json({ error: { code: "NotFound", message: "No such route" } }, 404));
  return app;
}
