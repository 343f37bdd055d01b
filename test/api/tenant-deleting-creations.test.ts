import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { adminToken, call, newTenant } from "./helpers.ts";
import { receiver, eventually } from "./webhooks-helpers.ts";

// A tenant being deleted creates nothing new (docs/data.md "A whole tenant"). A request whose key
// was verified just before the DELETE (or a key another isolate still trusts for up to 5 s) reaches
// the tenant's object after the tenant is deleting: its creation is refused there (409
// TenantDeleting), not registered where it would live until the tenant's data is wiped.

const admin = (path: string, method = "GET") => call(`/v1/admin${path}`, { method, token: adminToken() });

/** A request whose body arrives only when `finish` is called: authenticated first, created later. */
function slowRequest(path: string, method: string, key: string, body: unknown) {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const answer = fetchWorker(path, method, key, readable);
  return {
    answer,
    finish: () => {
      void writer.write(new TextEncoder().encode(JSON.stringify(body)));
      void writer.close();
    },
  };
}

function fetchWorker(path: string, method: string, key: string, body: ReadableStream<Uint8Array>): Promise<Response> {
  return exports.default.fetch(`http://api.test${path}`, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
}

/** Until the tenant's object verified the key (it records the key's first use then). */
async function untilVerified(tenantId: string, keyId: string): Promise<void> {
  await eventually(async () => {
    const page = await (await admin(`/tenants/${tenantId}/keys`)).json<{ items: { keyId: string; lastUsedAt?: number }[] }>();
    return page.items.find((row) => row.keyId === keyId)?.lastUsedAt !== undefined ? true : undefined;
  }, "the key's verification");
}

describe("a tenant being deleted creates nothing new", { timeout: 60_000 }, () => {
  it("a webhook endpoint whose request reaches the tenant after its DELETE is refused, not registered", async () => {
    const { tenantId, key, keyId } = await newTenant("radm_delwh");
    const url = receiver("radm-delwh").url("ok");
    const request = slowRequest("/v1/webhooks", "POST", key, { url, events: ["operation.settled"] });
    await untilVerified(tenantId, keyId);

    const deleted = await admin(`/tenants/${tenantId}`, "DELETE");
    expect(deleted.status).toBe(202);
    expect((await admin(`/tenants/${tenantId}`)).status).toBe(200);

    request.finish();
    const response = await request.answer;
    const text = await response.text();
    // Refused as the admin's own creations are here (409 TenantDeleting for POST …/keys, PATCH
    // …/quotas), or as the key now is (401); never registered in a tenant being deleted.
    expect({ refused: [401, 409].includes(response.status), status: response.status, text }).toMatchObject({ refused: true });
  });

  const late: [string, string, string, unknown][] = [
    ["an agent", "/v1/agents", "POST", { id: "late-agent", model: { provider: "scripted", modelId: "echo" } }],
    ["a tenant tool", "/v1/tools/late_tool", "PUT", { kind: "client", description: "Late", parameters: { type: "object" } }],
    ["a provider key", "/v1/providers/openai", "PUT", { apiKey: "sk-late-key-0123456789" }],
    ["a default model", "/v1/me/default-model", "PUT", { provider: "scripted", modelId: "echo" }],
  ];
  for (const [what, path, method, body] of late) {
    it(`${what} whose request reaches the tenant after its DELETE is refused, not written`, async () => {
      const { tenantId, key, keyId } = await newTenant(`radm_del_${path.split("/")[2]}`);
      const request = slowRequest(path, method, key, body);
      await untilVerified(tenantId, keyId);

      expect((await admin(`/tenants/${tenantId}`, "DELETE")).status).toBe(202);

      request.finish();
      const response = await request.answer;
      const text = await response.text();
      expect({ refused: [401, 409].includes(response.status), status: response.status, text }).toMatchObject({ refused: true });
    });
  }
});
