import { createApp } from "./app.ts";

export { SessionObject } from "../durable-objects/session-object.ts";
export { TenantObject } from "../durable-objects/tenant-object.ts";
export { DeferredIndex } from "../durable-objects/deferred-index.ts";

const app = createApp();

export default {
  fetch: app.fetch,
  // The minute cron resumes deferred runs (D8); there are none before deferred runs exist.
  async scheduled(): Promise<void> {},
} satisfies ExportedHandler<Env>;
