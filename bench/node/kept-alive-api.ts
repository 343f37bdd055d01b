import { Agent, request } from "node:http";
import type { RequestOptions } from "../../test/e2e/client-helpers.ts";

// Our REST API driven over node:http with one kept-alive connection: the lean HTTP client of
// Node, beside `Api` (Node's fetch). Node's fetch spends about 1–3 ms per request in the client
// (undici's WHATWG streams and header objects, measured on this machine as GET /health over both);
// P1 reports a turn with each, so the server's share is visible on its own.

export class KeptAliveApi {
  private readonly agent: Agent;
  private readonly url: URL;

  /** `connections`: kept-alive connections, one per request in flight (one by default). */
  constructor(
    baseUrl: string,
    private readonly token: string,
    connections = 1,
  ) {
    this.url = new URL(baseUrl);
    this.agent = new Agent({ keepAlive: true, maxSockets: connections });
  }

  /** A request that must answer `status`; returns its JSON body (null when empty). */
  expect<T>(status: number, method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const data = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string | number> = { authorization: `Bearer ${this.token}`, ...options.headers };
    if (data !== undefined) {
      headers["content-type"] = "application/json";
      headers["content-length"] = Buffer.byteLength(data);
    }
    return new Promise<T>((resolve, reject) => {
      const outgoing = request({ host: this.url.hostname, port: this.url.port, path, method, headers, agent: this.agent }, (incoming) => {
        let text = "";
        incoming.setEncoding("utf8");
        incoming.on("data", (chunk: string) => (text += chunk));
        incoming.on("error", reject);
        incoming.on("end", () => {
          if (incoming.statusCode !== status) return reject(new Error(`${method} ${path}: expected ${status}, got ${incoming.statusCode} ${text.slice(0, 300)}`));
          try {
            resolve(text === "" ? null : JSON.parse(text));
          } catch (error) {
            reject(error);
          }
        });
      });
      outgoing.on("error", reject);
      outgoing.end(data);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
