import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { egressProblem } from "../../schema/egress-policy.ts";
import { sealSecret, secretBoxKey } from "../../secrets/secret-box.ts";
import { discoverMcpTools } from "../../tools/mcp-discovery.ts";
import { mcpCredentialContext, type StoredMcpServer } from "../../tools/mcp-definitions.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { mcpScope } from "./mcp-helpers.ts";

// The egress policy's edges (docs/security.md): no MCP exchange follows a redirect, not even one
// within the same origin (the MCP SDK's transport would follow that itself, re-sending the
// registered headers); and the names hosts files commonly give loopback are refused as loopback.

describe("MCP exchanges and redirects", () => {
  it("a 307 from the registered URL to another path of the same origin is an answer: nothing reaches the target, no header is re-sent", async () => {
    const scope = mcpScope("egress-redirect");
    const real = new URL(scope.url);
    // The registered URL: same origin as the real MCP endpoint, another path.
    const registered = `${real.origin}/moved${real.pathname}`;
    const seen: string[] = [];
    const redirecting: typeof fetch = async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      seen.push(`${init?.method ?? "GET"} ${url.pathname}`);
      if (url.pathname.startsWith("/moved/")) return new Response("moved", { status: 307, headers: { location: real.pathname } });
      return fetch(input, init);
    };
    const key = await secretBoxKey(env.SECRETS_KEY, "mcp-credential");
    const server: StoredMcpServer = {
      url: registered,
      prefix: "docs_",
      replay: "never",
      timeoutMs: 10_000,
      headerNames: ["Authorization"],
      sealedHeaders: await sealSecret(key, JSON.stringify({ Authorization: "Bearer egress-token-0001" }), mcpCredentialContext("egress-s", "docs")),
      revision: "r1",
      tools: [],
      skippedTools: [],
    };
    let outcome: string;
    try {
      const discovery = await discoverMcpTools({ sessionId: "egress-s", serverName: "docs", server }, { secretsKey: env.SECRETS_KEY, allowLoopback: true, fetch: redirecting }, new AbortController().signal);
      outcome = `ready with ${discovery.tools.length} tools`;
    } catch (error) {
      outcome = error instanceof Error ? error.message : String(error);
    }
    // The 307 is an answer like any other status.
    const requests = await scope.requests();
    expect({ outcome, seen, authorizationsAtTarget: requests.map((request) => request.authorization) }).toEqual({
      outcome: "The MCP server docs answered HTTP 307",
      seen: [`POST /moved${real.pathname}`],
      authorizationsAtTarget: [],
    });
  });
});

describe("names hosts files give loopback", () => {
  it("localhost.localdomain and its IPv4/IPv6 twins are refused as loopback (https, LOCAL_DEV off)", () => {
    const names = ["localhost.localdomain", "localhost4.localdomain4", "localhost6.localdomain6"];
    const verdicts = Object.fromEntries(names.map((name) => [name, egressProblem(`https://${name}/hook`, false)?.rule ?? "allowed"]));
    expect(verdicts).toEqual({ "localhost.localdomain": "loopback", "localhost4.localdomain4": "loopback", "localhost6.localdomain6": "loopback" });
  });

  it("POST /v1/webhooks refuses https://localhost.localdomain/hook with 422 InvalidWebhookUrl", async () => {
    const setup = await laneSetup("egresslocaldomain");
    const response = await call("/v1/webhooks", { body: { url: "https://localhost.localdomain/hook", events: ["operation.settled"] }, token: setup.key });
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ error: { code: "InvalidWebhookUrl" } });
  });
});
