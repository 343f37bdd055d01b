// Values the workers pool's global setup (Node) hands to the tests in workerd (vitest provide/inject).
declare module "vitest" {
  export interface ProvidedContext {
    /** The base URL of the local webhook server the http tool tests call (test/node/tool-webhook-server.ts). */
    toolWebhookUrl: string;
    /** The base URL of the tenant webhook receiver the webhook tests register (test/node/webhook-receiver-setup.ts). */
    webhookReceiverUrl: string;
    /** The base URL of the local MCP server the MCP tests register (test/node/mcp-test-server.ts). */
    mcpServerUrl: string;
    /** A loopback listener nothing may reach: it counts every connection (test/node/egress-fixtures.ts). */
    egressTripwireUrl: string;
    /** Loopback fixtures that redirect to the tripwire, reset the connection or never answer. */
    egressFixturesUrl: string;
    /** A loopback port nothing listens on: a connection to it is refused. */
    egressClosedUrl: string;
  }
}

export {};
