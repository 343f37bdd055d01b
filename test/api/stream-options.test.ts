import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { expectError, tenantWithSession } from "./session-helpers.ts";

// `settings.streamOptions.maxTokens` and `temperature` are set through PATCH /v1/sessions/{sid},
// bounded (maxTokens 1–1,000,000 whole tokens, temperature 0–2); a value out of bounds is 400 and
// nothing is written. That they reach the provider is test/models/request-options.test.ts.

async function patch(setup: { key: string; base: string }, streamOptions: unknown): Promise<Response> {
  return call(setup.base, { method: "PATCH", body: { settings: { streamOptions } }, token: setup.key });
}

describe("stream options maxTokens and temperature", () => {
  it("are stored by PATCH /v1/sessions/{sid} and shown by GET", async () => {
    const setup = await tenantWithSession("streamopts");
    const patched = await patch(setup, { maxTokens: 2048, temperature: 0.7 });
    expect(patched.status).toBe(200);
    const session = await (await call(setup.base, { token: setup.key })).json<{ settings: { streamOptions: unknown } }>();
    expect(session.settings.streamOptions).toEqual({ maxTokens: 2048, temperature: 0.7 });
  });

  it("out of bounds are 400 ValidationFailed naming the field, and nothing is written", async () => {
    const setup = await tenantWithSession("streamopts");
    for (const streamOptions of [{ maxTokens: 0 }, { maxTokens: 1.5 }, { maxTokens: 1_000_001 }, { temperature: -0.1 }, { temperature: 2.01 }, { temperature: "hot" }]) {
      const refused = await patch(setup, streamOptions);
      await expectError(refused.clone(), 400, "ValidationFailed");
      const field = Object.keys(streamOptions)[0] ?? "";
      expect((await refused.json<{ error: { message: string } }>()).error.message, JSON.stringify(streamOptions)).toContain(`settings.streamOptions.${field}`);
    }
    const session = await (await call(setup.base, { token: setup.key })).json<{ settings: { streamOptions: unknown } }>();
    expect(session.settings.streamOptions).toEqual({});
  });
});
