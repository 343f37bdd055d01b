import { Api, createTenant, readAdminToken } from "../e2e/client-helpers.ts";
import { SOAK_TOOLS } from "./actor.ts";
import type { SoakClient } from "./cluster.ts";
import type { SoakSession } from "./invariants.ts";
import type { Ledger } from "./ledger.ts";

// The soak's tenant and sessions, made before the first kill: a tenant whose quotas leave room for
// the load, with a webhook endpoint for `operation.settled`; sessions with two lanes on
// `scripted/script`, each with the soak's tools: an http tool with `replay: "never"` and one with
// `replay: "safe"` (both calling the local fixture, which verifies their signatures), the builtin
// `wait`, the client tool `ask_client`, and the tools of a local MCP server (`kb_echo`, `replay:
// "never"`, and `kb_picture`, `"safe"`); every other session runs its tools sequentially (a client
// call then holds back the calls after it); and a schedule firing every minute on the first lane.

const QUESTION = { type: "object", properties: { question: { type: "string" } }, required: ["question"] };
export const LANES = ["main", "side"] as const;

/** The fixture scope of a session's `never_lookup` calls (the checker counts them there). */
export const neverScope = (sessionId: string) => sessionId;
const safeScope = (sessionId: string) => `${sessionId}-safe`;

/** The tenant, with `operation.settled` webhooks to `receiverUrl` (a local receiver). */
export async function createSoakTenant(baseUrl: string, receiverUrl: string): Promise<{ tenantId: string; key: string }> {
  const admin = new Api(baseUrl, readAdminToken());
  const { tenantId, key, api } = await createTenant(admin, "soak");
  await admin.expect(200, "PATCH", `/v1/admin/tenants/${tenantId}/quotas`, { body: { requestsPerMinute: 1_000_000, maxOpenOperations: 10_000 } });
  await api.expect(201, "POST", "/v1/webhooks", { body: { url: `${receiverUrl}/soak`, events: ["operation.settled"] } });
  return { tenantId, key };
}

/** The local fixtures the sessions' tools call. */
export interface SoakFixtures {
  toolUrl: string;
  mcpUrl: string;
}

export async function createSoakSession(api: Api, fixtures: SoakFixtures, sessionId: string, sequential: boolean): Promise<SoakSession> {
  const { toolUrl: fixtureUrl } = fixtures;
  const created = await api.expect<{ toolSecrets: Record<string, string> }>(201, "POST", "/v1/sessions", {
    body: {
      id: sessionId,
      // A small kept part, so that a compaction has something to summarize after a few runs.
      settings: { compaction: { enabled: true, reserveTokens: 16384, keepRecentTokens: 200 }, ...(sequential && { toolExecution: "sequential" }) },
      tools: {
        never_lookup: { kind: "http", description: "Looks up once", parameters: QUESTION, url: `${fixtureUrl}/hooks/${neverScope(sessionId)}/echo`, replay: "never" },
        safe_lookup: { kind: "http", description: "Looks up, safe to repeat", parameters: QUESTION, url: `${fixtureUrl}/hooks/${safeScope(sessionId)}/echo`, replay: "safe" },
        wait: { kind: "builtin" },
        ask_client: { kind: "client", description: "Asks the client", parameters: QUESTION },
      },
    },
  });
  // The MCP fixture's scope is the session id (the checker counts `echo` calls there).
  const mcp = await api.expect<{ status: string; toolCount: number }>(201, "PUT", `/v1/sessions/${sessionId}/mcp-servers/kb`, { body: { url: `${fixtures.mcpUrl}/mcp/${sessionId}`, allow: ["echo", "picture"], replay: { picture: "safe" } } });
  if (mcp.status !== "ready" || mcp.toolCount !== 2) throw new Error(`the MCP fixture was not registered: ${JSON.stringify(mcp)}`);
  for (const [tool, scope] of [
    ["never_lookup", neverScope(sessionId)],
    ["safe_lookup", safeScope(sessionId)],
  ] as const) {
    const secret = created.toolSecrets[tool];
    if (!secret) throw new Error(`no secret for ${tool}`);
    const stored = await fetch(`${fixtureUrl}/secrets/${scope}/echo`, { method: "PUT", body: secret });
    if (stored.status !== 204) throw new Error(`the fixture refused the secret of ${tool}: ${stored.status}`);
  }
  for (const lane of LANES) {
    await api.expect(201, "PUT", `/v1/sessions/${sessionId}/lanes/${lane}`, { body: { model: { provider: "scripted", modelId: "script" }, activeTools: [...SOAK_TOOLS] } });
  }
  // A schedule firing every minute on the first lane (pending behind a busy run): its runs are
  // checked like the workload's, from the schedule's run log.
  const schedule = await api.expect<{ id: string }>(201, "POST", `/v1/sessions/${sessionId}/lanes/${LANES[0]}/schedules`, { body: { everySeconds: 60, prompt: "scheduled run", ifBusy: "enqueue" } });
  return { id: sessionId, lanes: [...LANES], scheduleId: schedule.id };
}

/** Pauses every session's schedule (no run starts during the checks) and adds the runs it started to the ledger. */
export async function collectScheduledRuns(client: SoakClient, ledger: Ledger, sessions: readonly SoakSession[]): Promise<void> {
  const lane = LANES[0];
  for (const session of sessions) {
    const path = `/v1/sessions/${session.id}/lanes/${lane}/schedules/${session.scheduleId}`;
    await client.expect(200, "PATCH", path, { body: { paused: true } });
    const runs = await client.expect<{ items: { dueAt: number; operationId?: string; skipped?: string }[] }>(200, "GET", `${path}/runs?limit=100`);
    for (const run of runs.items) {
      if (run.operationId !== undefined) ledger.accept({ sessionId: session.id, lane, operationId: run.operationId, how: "scheduled run" });
      else ledger.count(`scheduled due time skipped: ${run.skipped}`);
    }
  }
}

/** Text steps each session's script gets when the load stops, for the runs still to come (pending ones, the schedule's). */
const CLOSING_STEPS = 20;

/**
 * Tops up every session's script: the actors stop appending steps when the load stops, and a run
 * that finds none left fails `assistant_error` (a valid end, but one that ends the run early).
 */
export async function topUpScripts(client: SoakClient, sessions: readonly SoakSession[]): Promise<void> {
  for (const session of sessions) {
    for (let index = 0; index < CLOSING_STEPS; index++) await client.create(201, `/v1/sessions/${session.id}/lists/scripted/steps`, { text: `closing words ${index}` });
  }
}
