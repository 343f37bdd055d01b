import type { SessionSummary } from "../../schema/api.ts";
import { removeSessionObjects } from "../../durable-objects/session/session-removal.ts";
import { tenantStub } from "../env.ts";
import { fail } from "../http-error.ts";
import { sessionIncarnations } from "../middleware/session-incarnations.ts";

/** What the tenant's index keeps of a session (listings and searches show it). */
function summaryOf(view: SessionSummary): SessionSummary {
  return { id: view.id, name: view.name, createdAt: view.createdAt, metadata: view.metadata, ...(view.agent !== undefined && { agent: view.agent }) };
}

/**
 * A session just created (a creation, a fork, an import) goes into its tenant's index before the
 * answer. A request whose key was checked before its tenant's deletion completed (a long upload)
 * finds the tenant gone: nothing could ever reach the new session, so it is deleted again and the
 * request answered as its key is now, 401.
 */
export async function registerCreated(env: Env, tenantId: string, view: SessionSummary): Promise<void> {
  const { registered, full } = await tenantStub(env, tenantId).registerSession(summaryOf(view));
  // Browser tokens of a session deleted before under this id are refused here at once.
  sessionIncarnations.remember(tenantId, view.id, view.createdAt, Date.now());
  if (registered) return;
  await removeSessionObjects(env, tenantId, view.id);
  // A tenant object at its storage budget lists no new session: the one just made is gone again.
  if (full) throw fail("LimitExceeded", "The tenant's storage is full: delete sessions (or agents, tools) it no longer needs", { resource: "tenantStorage" });
  throw fail("Unauthenticated", "A valid API key is required");
}
