import { DurableObject } from "cloudflare:workers";

/**
 * One per tenant (ARCHITECTURE D2): hashed API keys, the session index, quotas and usage totals.
 * Those arrive with the public API; until then the class exists so its SQLite-backed migration is
 * declared from the first deploy (a class can never switch storage backends later).
 */
export class TenantObject extends DurableObject<Env> {}
