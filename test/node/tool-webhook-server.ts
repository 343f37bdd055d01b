import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { listenOnLoopback, readBody } from "./loopback-server.ts";

/**
 * A tenant's webhook, as the docs tell a tenant to write one: it verifies each call's
 * HMAC-SHA256 signature over `timestamp + "." + body` with the tool's secret (refusing a bad or
 * stale one with 401) and records what it saw. Tests talk to it over plain HTTP:
 *
 * - `PUT /secrets/{scope}/{behaviour}` with the secret as the body: the secret the creation of the
 *   tool calling `/hooks/{scope}/{behaviour}` answered;
 * - `POST /hooks/{scope}/{behaviour}`: the tool's URL; the behaviour picks the answer: `echo`
 *   (the arguments back), `park-first` (the first call never answered, later ones are), `slow` (no
 *   answer), `stall-body` (headers and half a body), `fail` (500), `oversize` (300 KiB),
 *   `invalid` (not JSON), `wrong-shape` (JSON that is not a tool result);
 * - `GET /requests/{scope}`: every call received for the scope, in arrival order.
 *
 * A scope is one test's own namespace, so tests running side by side never see each other's calls.
 */

export interface ReceivedCall {
  behaviour: string;
  idempotencyKey: string | null;
  timestamp: string | null;
  signatureValid: boolean;
  body: unknown;
}

export interface ToolWebhookServer {
  url: string;
  close(): Promise<void>;
}

const MAX_SIGNATURE_AGE_SECONDS = 300;

/** How the webhook checks a call: the shape of the verification example in docs/tools.md. */
export type SignatureVerifier = (secret: string, headers: IncomingHttpHeaders, rawBody: string) => boolean;

export const verifySignature: SignatureVerifier = (secret, headers, rawBody) => {
  const timestamp = single(headers["x-tool-timestamp"]);
  const signature = single(headers["x-tool-signature"]);
  if (timestamp === undefined || signature === undefined) return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > MAX_SIGNATURE_AGE_SECONDS) return false;
  const expected = Buffer.from(`sha256=${createHmac("sha256", secret).update(`${timestamp}.${rawBody}`).digest("hex")}`);
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
};

export async function startToolWebhookServer(options: { verify?: SignatureVerifier } = {}): Promise<ToolWebhookServer> {
  const verify = options.verify ?? verifySignature;
  const secrets = new Map<string, string>();
  const calls = new Map<string, ReceivedCall[]>();
  const parked: ServerResponse[] = [];

  const server: Server = createServer((request, response) => {
    readBody(request).then(
      (raw) => route(request, response, raw),
      () => response.destroy(),
    );
  });

  function route(request: IncomingMessage, response: ServerResponse, raw: string): void {
    const [, area, scope = "", behaviour = ""] = (request.url ?? "").split("?")[0]?.split("/") ?? [];
    if (request.method === "PUT" && area === "secrets") {
      secrets.set(`${scope}/${behaviour}`, raw);
      response.writeHead(204).end();
    } else if (request.method === "GET" && area === "requests") {
      json(response, 200, calls.get(scope) ?? []);
    } else if (request.method === "POST" && area === "hooks") {
      hook(request, response, scope, behaviour, raw);
    } else {
      json(response, 404, { error: "no such route" });
    }
  }

  function hook(request: IncomingMessage, response: ServerResponse, scope: string, behaviour: string, raw: string): void {
    const secret = secrets.get(`${scope}/${behaviour}`);
    const signatureValid = secret !== undefined && verify(secret, request.headers, raw);
    const body = parseJson(raw);
    const received = calls.get(scope) ?? [];
    received.push({ behaviour, idempotencyKey: header(request, "idempotency-key") ?? null, timestamp: header(request, "x-tool-timestamp") ?? null, signatureValid, body });
    calls.set(scope, received);
    if (!signatureValid) return json(response, 401, { error: "bad signature" });
    const args = typeof body === "object" && body !== null && "arguments" in body ? body.arguments : undefined;
    switch (behaviour) {
      case "echo":
        return json(response, 200, { content: `echo ${JSON.stringify(args)}`, details: { idempotencyKey: header(request, "idempotency-key") ?? null } });
      case "park-first":
        // The first call never gets an answer (the test kills the caller meanwhile); later ones do.
        if (received.length === 1) {
          parked.push(response);
          return;
        }
        return json(response, 200, { content: `answered call ${received.length}` });
      case "slow":
        parked.push(response);
        return;
      case "stall-body":
        // Headers and half a body, then nothing: the deadline must cover reading the body too.
        response.writeHead(200, { "content-type": "application/json" });
        response.write('{"content": "half an ans');
        parked.push(response);
        return;
      case "fail":
        response.writeHead(500, { "content-type": "text/plain" }).end("internal trouble");
        return;
      case "oversize":
        return json(response, 200, { content: "x".repeat(300 * 1024) });
      case "invalid":
        response.writeHead(200, { "content-type": "application/json" }).end("this is not json");
        return;
      case "wrong-shape":
        return json(response, 200, { result: "no content field" });
      default:
        return json(response, 404, { error: `no behaviour ${behaviour}` });
    }
  }

  return listenOnLoopback(server, parked);
}

function header(request: IncomingMessage, name: string): string | undefined {
  return single(request.headers[name]);
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}
