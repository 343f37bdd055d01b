import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { TestProject } from "vitest/node";
import "../provided-context.ts";
import { listenOnLoopback, readBody } from "./loopback-server.ts";

// Global setup of the workers pool (runs in Node, before any test): a tenant's webhook receiver,
// reached by the TenantObject's deliveries over real HTTP. Tests learn its address through
// `inject("webhookReceiverUrl")`.
//
// - `POST /receive/{scope}/{behaviour}`: an endpoint URL; the behaviour picks the answer:
//   `ok` (204), `fail-twice` (500 to the first two calls of the path, then 200), `fail` (always
//   500), `hang-first` (the first call is never answered, later ones get 200), `hang` (never).
// - `GET /requests/{scope}`: every call received for the scope, in arrival order, with its
//   headers and raw body (signatures are checked by the tests, with the secret they were given).
//
// A scope is one test's own namespace, so tests running side by side never see each other's calls.

export interface ReceivedDelivery {
  behaviour: string;
  webhookId: string | null;
  timestamp: string | null;
  signature: string | null;
  rawBody: string;
}

export interface WebhookReceiver {
  url: string;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received = new Map<string, ReceivedDelivery[]>();
  const hanging: ServerResponse[] = [];

  const server = createServer((request, response) => {
    readBody(request).then(
      (raw) => route(request, response, raw),
      () => response.destroy(),
    );
  });

  function route(request: IncomingMessage, response: ServerResponse, raw: string): void {
    const [, area, scope = "", behaviour = ""] = (request.url ?? "").split("?")[0]?.split("/") ?? [];
    if (request.method === "GET" && area === "requests") {
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(received.get(scope) ?? []));
      return;
    }
    if (request.method !== "POST" || area !== "receive") {
      response.writeHead(404).end();
      return;
    }
    const calls = received.get(scope) ?? [];
    calls.push({ behaviour, webhookId: header(request, "webhook-id"), timestamp: header(request, "webhook-timestamp"), signature: header(request, "webhook-signature"), rawBody: raw });
    received.set(scope, calls);
    const nth = calls.filter((call) => call.behaviour === behaviour).length;
    if (behaviour === "hang" || (behaviour === "hang-first" && nth === 1)) {
      hanging.push(response);
      return;
    }
    const failing = behaviour === "fail" || (behaviour === "fail-twice" && nth <= 2);
    if (failing) response.writeHead(500, { "content-type": "text/plain" }).end("receiver trouble");
    else if (behaviour === "ok") response.writeHead(204).end();
    else response.writeHead(200, { "content-type": "text/plain" }).end("thanks");
  }

  return listenOnLoopback(server, hanging);
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const receiver = await startWebhookReceiver();
  project.provide("webhookReceiverUrl", receiver.url);
  return () => receiver.close();
}

function header(request: IncomingMessage, name: string): string | null {
  const value = request.headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? null;
}
