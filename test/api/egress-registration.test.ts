import { describe, expect, it } from "vitest";
import { INTERNAL_URLS } from "../helpers/internal-urls.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { ARGS_SCHEMA } from "./tool-api-helpers.ts";

// Issue 30 item 7 at registration, over REST: every route that stores an outbound URL refuses the
// internal addresses with its own invalid-URL answer, `details.reason: "unsafe_address"` and the
// rule, and stores nothing. The pool runs with LOCAL_DEV on, which relaxes plain http to loopback
// only: the list is https, and private ranges over http stay refused too.

/** The list, plus plain http to the non-loopback ones (refused even in local development). */
const REFUSED: readonly (readonly [string, string])[] = [
  ...INTERNAL_URLS,
  ...INTERNAL_URLS.filter(([, rule]) => rule !== "loopback").map(([url, rule]) => [url.replace("https:", "http:"), rule] as const),
];

describe("registration refuses internal addresses", () => {
  it("PUT /v1/providers/{provider}: 422 InvalidBaseUrl, reason unsafe_address; no key stored", async () => {
    const setup = await laneSetup("egbase");
    for (const [baseUrl, rule] of REFUSED) {
      const response = await call("/v1/providers/openai", { method: "PUT", body: { apiKey: "sk-egress-test-key-0001", baseUrl }, token: setup.key });
      expect({ baseUrl, status: response.status, body: await response.json() }).toMatchObject({
        baseUrl,
        status: 422,
        body: { error: { code: "InvalidBaseUrl", message: expect.stringMatching(/^baseUrl may not point at /), details: { provider: "openai", reason: "unsafe_address", rule } } },
      });
    }
    const listed = await (await call("/v1/providers", { token: setup.key })).json<{ source: string }[]>();
    expect(listed.filter((row) => row.source === "tenant")).toEqual([]);
  });

  it("POST /v1/webhooks: 422 InvalidWebhookUrl, reason unsafe_address; no endpoint stored", async () => {
    const setup = await laneSetup("eghook");
    for (const [url, rule] of REFUSED) {
      const response = await call("/v1/webhooks", { body: { url, events: ["operation.settled"] }, token: setup.key });
      expect({ url, status: response.status, body: await response.json() }).toMatchObject({
        url,
        status: 422,
        body: { error: { code: "InvalidWebhookUrl", message: expect.stringMatching(/^url may not point at /), details: { reason: "unsafe_address", rule } } },
      });
    }
    expect(await (await call("/v1/webhooks", { token: setup.key })).json()).toMatchObject({ items: [] });
  });

  it("PUT …/tools/{name} (http) and tools at session creation: 400 ValidationFailed on url, reason unsafe_address; nothing stored", async () => {
    const setup = await laneSetup("egtool");
    for (const [url, rule] of REFUSED) {
      const tool = { kind: "http", description: "d", parameters: ARGS_SCHEMA, url };
      const put = await call(`${setup.sessionPath}/tools/lookup`, { method: "PUT", body: tool, token: setup.key });
      expect({ url, status: put.status, body: await put.json() }).toMatchObject({
        url,
        status: 400,
        body: { error: { code: "ValidationFailed", message: expect.stringMatching(/^url: url may not point at /), details: { field: "url", tool: "lookup", reason: "unsafe_address", rule } } },
      });
      const created = await call("/v1/sessions", { body: { id: `${setup.sid}_x`, tools: { lookup: tool } }, token: setup.key });
      expect({ url, status: created.status, body: await created.json() }).toMatchObject({
        url,
        status: 400,
        body: { error: { code: "ValidationFailed", message: expect.stringMatching(/^tools\.lookup\.url: url may not point at /), details: { field: "url", tool: "lookup", reason: "unsafe_address", rule } } },
      });
    }
    const listed = await (await call(`${setup.sessionPath}/tools`, { token: setup.key })).json();
    expect(JSON.stringify(listed)).not.toContain("lookup");
    expect((await call(`/v1/sessions/${setup.sid}_x`, { token: setup.key })).status).toBe(404);
  });

  it("PUT …/mcp-servers/{name}: 400 ValidationFailed on url, reason unsafe_address; nothing stored", async () => {
    const setup = await laneSetup("egmcp");
    for (const [url, rule] of REFUSED) {
      const response = await call(`${setup.sessionPath}/mcp-servers/docs`, { method: "PUT", body: { url }, token: setup.key });
      expect({ url, status: response.status, body: await response.json() }).toMatchObject({
        url,
        status: 400,
        body: { error: { code: "ValidationFailed", message: expect.stringMatching(/^url: url may not point at /), details: { field: "url", server: "docs", reason: "unsafe_address", rule } } },
      });
    }
    expect(await (await call(`${setup.sessionPath}/mcp-servers`, { token: setup.key })).json()).toEqual({ items: [] });
  });
});
