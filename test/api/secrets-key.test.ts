import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { asResult } from "../../durable-objects/rpc/rpc-errors.ts";
import { secretBoxKey } from "../../secrets/secret-box.ts";
import { fromWire } from "../../schema/wire.ts";
import { createApp } from "../../worker/app.ts";
import { call, newTenant } from "./helpers.ts";

// A deployment without the encryption secret SECRETS_KEY (or with one too short to be safe) cannot
// seal a tenant's provider key: the route says so with a documented 503 NotConfigured naming the
// missing secret, writes nothing, and never answers 500. The test pool has the secret, so these
// requests go to the real app with an environment that lacks it.

const app = createApp();

async function putWithSecretsKey(secretsKey: string | undefined, key: string, provider: string, body: unknown): Promise<Response> {
  const request = new Request(`http://api.test/v1/providers/${provider}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return app.fetch(request, { ...env, SECRETS_KEY: secretsKey }, createExecutionContext());
}

describe("a deployment without SECRETS_KEY", () => {
  for (const [label, secretsKey] of [["missing", undefined], ["empty", ""], ["too short", "short-secret"]] as const) {
    it(`answers PUT /v1/providers/{provider} with 503 NotConfigured naming the secret (${label}), and stores nothing`, async () => {
      const tenant = await newTenant("nosecret");
      const response = await putWithSecretsKey(secretsKey, tenant.key, "anthropic", { apiKey: "sk-ant-without-secret-1234" });
      expect(response.status).toBe(503);
      const body = await response.json<{ error: { code: string; message: string; details?: unknown } }>();
      expect(body.error.code).toBe("NotConfigured");
      expect(body.error.message).toContain("SECRETS_KEY");
      expect(body.error.details).toEqual({ secret: "SECRETS_KEY" });
      const listed = await (await call("/v1/providers", { token: tenant.key })).json<{ provider: string }[]>();
      expect(listed.map((row) => row.provider)).toEqual(["openai"]);
    });
  }

  it("still checks the request first: a bad body is 400 and an unknown provider 404", async () => {
    const tenant = await newTenant("nosecret");
    expect((await putWithSecretsKey(undefined, tenant.key, "anthropic", { baseUrl: "https://x.example.com" })).status).toBe(400);
    expect((await putWithSecretsKey(undefined, tenant.key, "nosuch", { apiKey: "sk-whatever-key-1234" })).status).toBe(404);
  });

  it("inside an object, sealing without the secret is the tagged NotConfigured error, not a fault", async () => {
    for (const secretsKey of [undefined, "", "short-secret"]) {
      const result = fromWire(await asResult(() => secretBoxKey(secretsKey, "tool-secret")));
      expect(result).toMatchObject({ ok: false, error: { code: "NotConfigured", details: { secret: "SECRETS_KEY" } } });
    }
  });
});
