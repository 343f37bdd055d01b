import { createApp } from "./app.ts";
import { sweepDeferred } from "./deferred-sweep.ts";
import { sweepSchedules } from "./schedule-sweep.ts";
import { sweepRetention } from "./retention-sweep.ts";

export { SessionObject } from "../durable-objects/session/session-object.ts";
export { TenantObject } from "../durable-objects/tenant/tenant-object.ts";
export { DeferredIndex } from "../durable-objects/deferred-index/deferred-index.ts";

const app = createApp();

export default {
  fetch: app.fetch,
  // The minute cron resumes deferred runs whose poll is due (D8), wakes sessions whose schedule is
  // overdue (schedule-sweep.ts) and deletes sessions idle past their tenant's retention
  // (retention-sweep.ts), all at once.
  async scheduled(_controller, env, _ctx): Promise<void> {
    await Promise.all([sweepDeferred(env), sweepSchedules(env), sweepRetention(env)]);
  },
} satisfies ExportedHandler<Env>;
