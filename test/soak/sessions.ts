import { Api, createTenant, readAdminToken } from "../e2e/client-helpers.ts";
import { SOAK_TOOLS } from "./actor.ts";
import type { SoakSession } from "./invariants.ts";

// The soak's tenant and sessions, made before the first kill: a tenant whose quotas leave room for
// the load, and sessions with two lanes on `scripted/script`, each with the soak's tools: an http
// tool with `replay: "never"` and one with `replay: "safe"` (both calling the local fixture, which
// verifies their signatures), and the builtin `wait`.

const QUESTION = { type: "object", properties: { question: { type: "string" } }, required: ["question"] };
export const LANES = ["main", "side"] as const;

/** The fixture scope of a session's `never_lookup` calls (the checker counts them there). */
export const neverScope = (sessionId: string) => sessionId;
const safeScope = (sessionId: string) => `${sessionId}-safe`;

export async function createSoakTenant(baseUrl: string): Promise<{ tenantId: string; key: string }> {
  const admin = new Api(baseUrl, readAdminToken());
  const { tenantId, key } = await createTenant(admin, "soak");
  await admin.expect(200, "PATCH", `/v1/admin/tenants/${tenantId}/quotas`, { body: { requestsPerMinute: 1_000_000, maxOpenOperations: 10_000 } });
  return { tenantId, key };
}

export async function createSoakSession(api: Api, fixtureUrl: string, sessionId: string): Promise<SoakSession> {
  const created = await api.expect<{ toolSecrets: Record<string, string> }>(201, "POST", "/v1/sessions", {
    body: {
      id: sessionId,
      tools: {
        never_lookup: { kind: "http", description: "Looks up once", parameters: QUESTION, url: `${fixtureUrl}/hooks/${neverScope(sessionId)}/echo`, replay: "never" },
        safe_lookup: { kind: "http", description: "Looks up, safe to repeat", parameters: QUESTION, url: `${fixtureUrl}/hooks/${safeScope(sessionId)}/echo`, replay: "safe" },
        wait: { kind: "builtin" },
      },
    },
  });
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
  return { id: sessionId, lanes: [...LANES] };
}
