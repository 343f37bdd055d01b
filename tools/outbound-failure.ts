import { egressProblem } from "../schema/egress-policy.ts";

// What a tenant (or the model) is told when an outbound request of an http tool, an MCP server or
// a webhook delivery gets no answer: one of a few fixed sentences (docs/security.md). The runtime's
// own text ("Network connection lost.", "internal error; reference = …", a DNS or TLS message)
// never travels: it says nothing useful, and telling a refused connection from a reset or a
// silent port would let a tenant map which ports of a host are open.

/** Why a stored URL may not be requested now, as `{subject} was not contacted: …`; undefined when it may. */
export function notContacted(subject: string, url: string, localDevelopment: boolean): string | undefined {
  const problem = egressProblem(url, localDevelopment);
  return problem && `${subject} was not contacted: ${problem.message}`;
}

/** Any connection-level failure: refused, reset, closed before or during the answer, DNS, TLS. */
export function unreachable(subject: string): string {
  return `${subject} could not be reached`;
}

/** No (whole) answer within the request's deadline. */
export function noAnswerWithin(subject: string, timeoutMs: number): string {
  return `${subject} did not answer within ${timeoutMs} ms`;
}

/** An error that stands for a connection-level failure of the transport (its message is not the runtime's). */
export class ConnectionFailed extends Error {
  override readonly name = "ConnectionFailed";
  constructor() {
    super("The connection failed");
  }
}

/**
 * `send` with every failure of the transport itself — the request's fetch rejecting, or its
 * response body erroring while being read — turned into a ConnectionFailed. Aborts through the
 * request's own signal stay what they are, so a caller can still tell its deadline or its caller's
 * abort from a lost connection. Redirects are never followed: a 3xx is an answer like any other.
 */
export function connectionFailures(send: typeof fetch): (input: string | URL, init?: RequestInit) => Promise<Response> {
  return async (input, init = {}) => {
    let response: Response;
    try {
      response = await send(input, { ...init, redirect: "manual" });
    } catch (error) {
      throw init.signal?.aborted ? error : new ConnectionFailed();
    }
    // A null-body status cannot be rebuilt with a body (and has none to read).
    if (!response.body || [101, 204, 205, 304].includes(response.status)) return response;
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (error) {
          controller.error(init.signal?.aborted ? error : new ConnectionFailed());
        }
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
