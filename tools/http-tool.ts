import * as v from "valibot";
import type { ExecutableTool, ToolOutput } from "../harness/execution/tools.ts";
import { JsonValueSchema } from "../schema/json.ts";
import { ImageContentSchema, TextContentSchema } from "../schema/messages.ts";
import { DEFAULT_HTTP_TOOL_TIMEOUT_MS } from "../schema/tools.ts";
import { openSecret, secretBoxKey } from "../secrets/secret-box.ts";
import type { CallContextOf } from "./call-context.ts";
import { toolSecretContext, type StoredToolDefinition } from "./definitions.ts";
import { noAnswerWithin, notContacted, unreachable } from "./outbound-failure.ts";

// The http kind (ARCHITECTURE D11): a tenant's webhook. Each call is one POST of JSON, signed with
// HMAC-SHA256 over `timestamp + "." + body` with the tool's own secret, and carrying the
// invocation id as its Idempotency-Key, so a safe replay after a crash is recognisable as the
// same call. Whatever goes wrong on the way (timeout, non-2xx, an oversized or malformed answer)
// becomes an error result for the model, never a failed run.

export interface HttpToolSettings {
  /** The deployment secret the per-tool secrets are sealed under. */
  secretsKey: string;
  /** Plain http to loopback hosts (local development only; schema/egress-policy.ts). */
  allowLoopback: boolean;
  fetch?: typeof fetch;
}

/** The subject of every message about the endpoint that the model reads. */
const ENDPOINT = "The tool endpoint";

export const MAX_HTTP_TOOL_RESPONSE_BYTES = 256 * 1024;
export const SIGNATURE_HEADER = "X-Tool-Signature";
export const TIMESTAMP_HEADER = "X-Tool-Timestamp";

const HttpToolResponseSchema = v.strictObject({
  content: v.union([v.string(), v.pipe(v.array(v.variant("type", [TextContentSchema, ImageContentSchema])), v.maxLength(64))]),
  isError: v.optional(v.boolean()),
  details: v.optional(JsonValueSchema),
  terminate: v.optional(v.boolean()),
});

export function httpTool(sessionId: string, name: string, stored: StoredToolDefinition, settings: HttpToolSettings, context: CallContextOf): ExecutableTool {
  return {
    kind: "executable",
    declaration: { name, kind: "http", description: stored.description, parameters: stored.parameters, replay: stored.replay },
    execute: async (args, { toolCallId, signal, invocation }) => {
      const url = stored.url ?? "";
      // Checked again at every call: a definition stored in local development, or before the
      // policy tightened, is not called where the policy refuses it.
      const refused = notContacted(ENDPOINT, url, settings.allowLoopback);
      if (refused) throw new Error(refused);
      if (stored.sealedSecret === undefined) throw new Error(`Tool ${name} has no signing secret`);
      const key = await secretBoxKey(settings.secretsKey, "tool-secret");
      const secret = await openSecret(key, stored.sealedSecret, toolSecretContext(sessionId, name));
      // The context is inside the signed body: an endpoint that verified the signature can trust who is calling.
      const body = JSON.stringify({ tool: name, toolCallId, invocationId: invocation.invocationId, operationId: invocation.operationId, arguments: args, context: context(invocation, toolCallId) });
      const timestamp = String(Math.floor(Date.now() / 1000));
      const timeoutMs = stored.timeoutMs ?? DEFAULT_HTTP_TOOL_TIMEOUT_MS;
      // One deadline for the whole exchange: an endpoint that sends its headers and then stalls
      // in the body has not answered either.
      const deadline = AbortSignal.timeout(timeoutMs);
      try {
        const response = await (settings.fetch ?? fetch)(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "idempotency-key": invocation.invocationId,
            [TIMESTAMP_HEADER]: timestamp,
            [SIGNATURE_HEADER]: `sha256=${await hmacHex(secret, `${timestamp}.${body}`)}`,
          },
          body,
          redirect: "manual",
          signal: AbortSignal.any([signal, deadline]),
        });
        if (response.status < 200 || response.status > 299) {
          await response.body?.cancel();
          throw new EndpointAnswerError(`The tool endpoint answered HTTP ${response.status}`);
        }
        return parseAnswer(await boundedText(response, MAX_HTTP_TOOL_RESPONSE_BYTES));
      } catch (error) {
        if (signal.aborted || error instanceof EndpointAnswerError) throw error;
        // Whatever the runtime said (refused, reset, DNS, TLS) is not repeated: one sentence each.
        throw new Error(deadline.aborted ? noAnswerWithin(ENDPOINT, timeoutMs) : unreachable(ENDPOINT));
      }
    },
  };
}

/** What the endpoint answered is not a usable result (the message is what the model sees). */
class EndpointAnswerError extends Error {
  override readonly name = "EndpointAnswerError";
}

function parseAnswer(text: string): ToolOutput {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new EndpointAnswerError("The tool endpoint answered with a body that is not JSON");
  }
  const parsed = v.safeParse(HttpToolResponseSchema, json);
  if (!parsed.success) throw new EndpointAnswerError(`The tool endpoint's answer is not a tool result: ${v.summarize(parsed.issues).slice(0, 500)}`);
  const { content, isError, details, terminate } = parsed.output;
  return {
    content: typeof content === "string" ? [{ type: "text", text: content }] : content,
    ...(isError !== undefined && { isError }),
    ...(details !== undefined && { details }),
    ...(terminate !== undefined && { terminate }),
  };
}

/** The body as text, refusing (and cancelling) it once it passes `limit` bytes. */
async function boundedText(response: Response, limit: number): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new EndpointAnswerError(`The tool endpoint's answer is larger than ${limit} bytes`);
    }
    chunks.push(value);
  }
  const joined = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    joined.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new TextDecoder().decode(joined);
}

export async function hmacHex(secret: string, message: string): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const signature = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(message)));
  return [...signature].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}
