import type { AssistantMessageEventStream, FetchFunction } from "@earendil-works/pi-ai";
import { isRecord } from "../../schema/json.ts";

/** One HTTP request as pi-ai would have sent it (its auth headers included: held for this call only). */
export interface CapturedRequest {
  url: string;
  headers: Headers;
  body: Record<string, unknown>;
}

/**
 * Builds a provider request the way pi-ai builds it (messages, tools, reasoning, cache markers,
 * auth headers), without sending it: pi-ai's own stream runs against a transport that records the
 * request and answers 400, and that failed stream is drained and dropped. A deferred submission
 * then sends the same body in its own envelope (a background response, a one-request batch), so
 * the two paths can never disagree on how a context becomes a request.
 */
export async function captureRequest(start: (transport: FetchFunction) => AssistantMessageEventStream): Promise<CapturedRequest> {
  let captured: CapturedRequest | undefined;
  const transport: FetchFunction = async (input, init) => {
    const request = new Request(input, init);
    const text = await request.text();
    const body: unknown = text.length > 0 ? JSON.parse(text) : {};
    if (captured === undefined && isRecord(body)) captured = { url: request.url, headers: new Headers(request.headers), body };
    return new Response(JSON.stringify({ error: { type: "invalid_request_error", message: "captured, not sent" } }), {
      status: 400,
      headers: { "content-type": "application/json" },
    });
  };
  await start(transport).result();
  if (captured === undefined) throw new Error("The provider built no HTTP request to submit");
  return captured;
}
