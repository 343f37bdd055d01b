import { createParser, type EventSourceParser } from "eventsource-parser";

// A server may answer a request's POST as an event stream (text/event-stream) that carries the
// response among other messages. When that stream breaks or ends before the response, and named no
// event id to resume from, the MCP SDK never settles the request: it reports a broken stream only
// through `transport.onerror` (which it also calls for failures the request itself rejects with,
// such as an HTTP status) and says nothing of a stream that simply ends, so the exchange would wait
// for its deadline. The stream is followed here instead, on its bytes and in their order: one that
// ends without the response is a connection that failed, known at once and never too early.

type Send = (input: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * `send` that calls `onLost` when an event-stream answer to a request ends or breaks without the
 * response to it (and without an event id the SDK would resume from). An end caused by the
 * request's own signal (the client closing) is not a loss.
 */
export function watchStreamedAnswers(send: Send, onLost: () => void): Send {
  return async (input, init) => {
    const response = await send(input, init);
    const requestId = requestIdOf(init?.body);
    if (requestId === undefined || !response.ok || !response.body || !isEventStream(response)) return response;
    const scanner = new AnswerScanner(requestId);
    const reader = response.body.getReader();
    const ended = (): void => {
      if (!scanner.answered && !scanner.resumable && !init?.signal?.aborted) onLost();
    };
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        let read: ReadableStreamReadResult<Uint8Array>;
        try {
          read = await reader.read();
        } catch (error) {
          ended();
          controller.error(error);
          return;
        }
        if (read.done) {
          ended();
          controller.close();
          return;
        }
        scanner.push(read.value);
        controller.enqueue(read.value);
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** The id of the JSON-RPC request a POST body carries; undefined for a notification or a response (no answer to wait for). */
function requestIdOf(body: RequestInit["body"]): string | number | undefined {
  if (typeof body !== "string") return undefined;
  try {
    const message: unknown = JSON.parse(body);
    if (typeof message !== "object" || message === null || !("method" in message) || !("id" in message)) return undefined;
    return typeof message.id === "string" || typeof message.id === "number" ? message.id : undefined;
  } catch {
    return undefined;
  }
}

function isEventStream(response: Response): boolean {
  return (response.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase() === "text/event-stream";
}

/**
 * Follows the events of a stream as its bytes pass, with the parser the SDK itself uses
 * (eventsource-parser): an event counts once dispatched, as the SDK would read it. An id on any
 * event makes the stream resumable by the SDK, which then reconnects rather than failing.
 */
class AnswerScanner {
  answered = false;
  resumable = false;
  private readonly decoder = new TextDecoder();
  private readonly parser: EventSourceParser;

  constructor(requestId: string | number) {
    this.parser = createParser({
      onEvent: (event) => {
        if (event.id !== undefined && event.id !== "") this.resumable = true;
        if (isResponseTo(event.data, requestId)) this.answered = true;
      },
    });
  }

  push(bytes: Uint8Array): void {
    if (!this.answered) this.parser.feed(this.decoder.decode(bytes, { stream: true }));
  }
}

function isResponseTo(data: string, requestId: string | number): boolean {
  try {
    const message: unknown = JSON.parse(data);
    return typeof message === "object" && message !== null && "id" in message && String(message.id) === String(requestId) && ("result" in message || "error" in message);
  } catch {
    return false;
  }
}
