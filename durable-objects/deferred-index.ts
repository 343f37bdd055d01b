import { DurableObject } from "cloudflare:workers";

/**
 * A shard of the registry of suspended (deferred) runs that the cron sweep resumes (ARCHITECTURE
 * D8). It fills in with deferred runs; declared now so its SQLite-backed migration exists from the
 * first deploy.
 */
export class DeferredIndex extends DurableObject<Env> {}
