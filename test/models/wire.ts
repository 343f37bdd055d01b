import type { FetchFunction } from "@earendil-works/pi-ai";

// Provider wire fixtures: HTTP answers written from each provider's documented streaming format,
// served to pi-ai through the request's injected `fetch`. No network is touched.

export interface WireAnswer {
  status?: number;
  headers?: Record<string, string>;
  /** The body, sent as one chunk per element (SSE events, or JSON text). */
  chunks: string[];
  /** Cut the body off after this many chunks (the connection drops mid-reply). */
  cutAfter?: number;
}

export interface SeenRequest {
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

/** `data: {json}` SSE events, with an optional `event:` line. */
export function sse(...events: { event?: string; data: unknown }[]): string[] {
  return events.map(({ event, data }) => `${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
}

/** A fetch that answers each request with the next answer, recording what was sent. */
export function wireFetch(answers: WireAnswer[]): { fetch: FetchFunction; seen: SeenRequest[]; remaining: () => number } {
  const queue = [...answers];
  const seen: SeenRequest[] = [];
  const fetch: FetchFunction = async (input, init) => {
    const request = new Request(input, init);
    const text = await request.text();
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    seen.push({ url: request.url, headers, body: text ? JSON.parse(text) : undefined });
    const answer = queue.shift();
    if (!answer) return new Response("no fixture left", { status: 599 });
    const encoder = new TextEncoder();
    const chunks = answer.cutAfter === undefined ? answer.chunks : answer.chunks.slice(0, answer.cutAfter);
    // Pulled one chunk at a time: an error raised with chunks still queued would discard them.
    let next = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const chunk = chunks[next++];
        if (chunk !== undefined) controller.enqueue(encoder.encode(chunk));
        else if (answer.cutAfter === undefined) controller.close();
        else controller.error(new TypeError("terminated: the connection was closed mid-stream"));
      },
    });
    const streaming = (answer.status ?? 200) < 400;
    return new Response(body, {
      status: answer.status ?? 200,
      headers: { "content-type": streaming ? "text/event-stream" : "application/json", ...answer.headers },
    });
  };
  return { fetch, seen, remaining: () => queue.length };
}

/** A JSON error answer as providers send them. */
export function errorAnswer(status: number, message: string, headers: Record<string, string> = {}): WireAnswer {
  return { status, headers, chunks: [JSON.stringify({ error: { message, type: status === 429 ? "rate_limit_error" : "api_error", code: null } })] };
}
