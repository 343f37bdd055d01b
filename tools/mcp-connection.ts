import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { openSecret, secretBoxKey } from "../secrets/secret-box.ts";
import { mcpCredentialContext, type StoredMcpServer } from "./mcp-definitions.ts";
import { watchStreamedAnswers } from "./mcp-streamed-answers.ts";
import { ConnectionFailed, connectionFailures, noAnswerWithin, notContacted, unreachable } from "./outbound-failure.ts";

// One short-lived MCP client session per exchange (a discovery or one tool call): connect
// (initialize), one request, close. Nothing is kept open between calls, so a Durable Object that
// hibernates or restarts holds no connection state, and every exchange carries the abort signal,
// the server's timeout and a bound on the bytes it will read.

export interface McpSettings {
  /** The deployment secret the headers are sealed under. */
  secretsKey: string;
  /** Plain http to loopback hosts (local development only). */
  allowLoopback: boolean;
  fetch?: typeof fetch;
}

/** The most any one answer of a server (a tool list page, a call's result) may be, in bytes. */
export const MAX_MCP_RESPONSE_BYTES = 256 * 1024;
const SDK_TIMEOUT_MARGIN_MS = 5_000;
const CLIENT_INFO = { name: "durable-agent-sessions", version: "1.0.0" };
/** A message the model or the tenant sees is cut here: a server's error text is not ours to bound. */
const MAX_MESSAGE_CHARS = 500;

/** Why an exchange failed, in words for the model (a call) or the tenant (a discovery). */
export class McpExchangeError extends Error {
  override readonly name = "McpExchangeError";
}

export interface McpTarget {
  sessionId: string;
  serverName: string;
  server: StoredMcpServer;
  /** Where the headers are sealed when not in the session (a tenant server's own: tenantMcpCredentialContext). */
  credentialContext?: string;
}

/**
 * Runs `exchange` against a connected client and closes it. Every failure except an abort through
 * `signal` becomes an McpExchangeError with a message that says what went wrong.
 */
export async function withMcpClient<T>(
  target: McpTarget,
  settings: McpSettings,
  limits: { signal: AbortSignal; timeoutMs: number },
  exchange: (client: Client, options: { signal: AbortSignal; timeout: number }) => Promise<T>,
): Promise<T> {
  const { server, serverName } = target;
  const { signal, timeoutMs } = limits;
  // Checked before every exchange: a server registered in local development, or before the
  // policy tightened, is not contacted where the policy refuses it.
  const refused = notContacted(`The MCP server ${serverName}`, server.url, settings.allowLoopback);
  if (refused) throw new McpExchangeError(refused);
  const headers = await openHeaders(target, settings);
  // One deadline for the whole exchange (connect included): a server that accepts and then stalls has not answered either.
  const deadline = AbortSignal.timeout(timeoutMs);
  // An oversized answer ends the exchange at once: the SDK treats a broken event stream as a
  // reason to reconnect, not as the request's failure, and would otherwise wait for the deadline.
  const overflow = new AbortController();
  // So does an event-stream answer that breaks or ends before the response: the SDK would not settle
  // the request either (tools/mcp-streamed-answers.ts). The server could not be reached, in effect.
  const lost = new AbortController();
  const combined = AbortSignal.any([signal, deadline, overflow.signal, lost.signal]);
  const watched = watchStreamedAnswers(connectionFailures(settings.fetch ?? fetch), () => lost.abort());
  const bounded = boundedFetch(watched, MAX_MCP_RESPONSE_BYTES, () => overflow.abort());
  const transport = new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers }, fetch: bounded.fetch });
  // The cfworker validator: the default (Ajv) compiles schemas with `new Function`, which workerd refuses.
  const client = new Client(CLIENT_INFO, { jsonSchemaValidator: new CfWorkerJsonSchemaValidator() });
  // The SDK's own request timeout is a backstop only: the deadline above ends the exchange first,
  // so a timeout is always reported as one (the SDK's would surface as a protocol error).
  const options = { signal: combined, timeout: timeoutMs + SDK_TIMEOUT_MARGIN_MS };
  try {
    await client.connect(transport, options);
    return await exchange(client, options);
  } catch (error) {
    if (signal.aborted) throw error;
    throw new McpExchangeError(describeFailure(serverName, timeoutMs, error, { timedOut: deadline.aborted, oversized: bounded.oversized(), lost: lost.signal.aborted }));
  } finally {
    await client.close().catch(() => undefined);
  }
}

async function openHeaders(target: McpTarget, settings: McpSettings): Promise<Record<string, string>> {
  if (target.server.sealedHeaders === undefined) return {};
  try {
    const key = await secretBoxKey(settings.secretsKey, "mcp-credential");
    const opened: unknown = JSON.parse(await openSecret(key, target.server.sealedHeaders, target.credentialContext ?? mcpCredentialContext(target.sessionId, target.serverName)));
    if (typeof opened !== "object" || opened === null || Array.isArray(opened)) throw new TypeError("not an object");
    return Object.fromEntries(Object.entries(opened).filter((entry): entry is [string, string] => typeof entry[1] === "string"));
  } catch {
    throw new McpExchangeError(`The stored headers of the MCP server ${target.serverName} cannot be opened; register the server again`);
  }
}

function describeFailure(serverName: string, timeoutMs: number, error: unknown, seen: { timedOut: boolean; oversized: boolean; lost: boolean }): string {
  if (error instanceof McpExchangeError) return error.message;
  if (seen.oversized) return `The MCP server ${serverName} answered more than ${MAX_MCP_RESPONSE_BYTES} bytes`;
  if (seen.timedOut) return noAnswerWithin(`The MCP server ${serverName}`, timeoutMs);
  // Refused, reset, DNS, TLS, an event stream cut off before the answer: one sentence, never the
  // runtime's text (tools/outbound-failure.ts).
  if (seen.lost || error instanceof ConnectionFailed) return unreachable(`The MCP server ${serverName}`);
  // The SDK's code is the HTTP status, or -1 for an answer of another content type (a web page).
  if (error instanceof StreamableHTTPError) return clip(`The MCP server ${serverName} answered ${isHttpStatus(error.code) ? `HTTP ${error.code}` : "in a way that is not MCP"}`);
  if (error instanceof McpError) return clip(`The MCP server ${serverName} answered with an error: ${error.message}`);
  return clip(`The MCP server ${serverName} failed: ${error instanceof Error ? error.message : String(error)}`);
}

function isHttpStatus(code: number | undefined): code is number {
  return code !== undefined && code >= 100 && code <= 599;
}

export function clip(text: string): string {
  return text.length <= MAX_MESSAGE_CHARS ? text : `${text.slice(0, MAX_MESSAGE_CHARS - 1)}…`;
}

/**
 * A fetch whose response bodies error once they pass `limit` bytes (the SDK reads JSON and event
 * streams whole, with no bound of its own). Redirects are never followed (docs/security.md
 * "Redirects"): the fetch does not follow them, and a 3xx reaches the SDK without its `Location`,
 * since the SDK itself would follow one within the same origin (the registered headers re-sent),
 * so it is answered as the status it is.
 */
function boundedFetch(inner: (input: string | URL, init?: RequestInit) => Promise<Response>, limit: number, onOverflow: () => void): { fetch: (input: string | URL, init?: RequestInit) => Promise<Response>; oversized: () => boolean } {
  let oversized = false;
  return {
    oversized: () => oversized,
    fetch: async (input, init) => {
      const response = await inner(input, init);
      if (response.status >= 300 && response.status < 400) {
        await response.body?.cancel();
        return new Response(null, { status: response.status, statusText: response.statusText });
      }
      // A null-body status cannot be rebuilt with a body (and has none to bound).
      if (!response.body || [101, 204, 205, 304].includes(response.status)) return response;
      let size = 0;
      const counter = new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          size += chunk.byteLength;
          if (size > limit) {
            oversized = true;
            onOverflow();
            controller.error(new McpExchangeError(`The answer is larger than ${limit} bytes`));
            return;
          }
          controller.enqueue(chunk);
        },
      });
      return new Response(response.body.pipeThrough(counter), { status: response.status, statusText: response.statusText, headers: response.headers });
    },
  };
}
