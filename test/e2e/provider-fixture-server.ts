import { createServer, type Server } from "node:http";
import { responsesStream } from "../models/family-wires.ts";

/**
 * A local stand-in for a provider's host (OpenAI's Responses API): every POST …/responses is
 * answered with a streamed reply written in the provider's documented SSE format, one event every
 * `eventMs`, so a watcher sees the reply grow. Records each request's authorization and body.
 */
export async function startProviderFixture(words: string[], eventMs = 40): Promise<{ baseUrl: string; requests: { path: string; authorization?: string; body: unknown }[]; close: () => Promise<void> }> {
  const requests: { path: string; authorization?: string; body: unknown }[] = [];
  const server: Server = createServer((request, response) => {
    let text = "";
    request.on("data", (chunk: Buffer) => (text += chunk.toString()));
    request.on("end", () => {
      requests.push({ path: request.url ?? "", ...(request.headers.authorization && { authorization: request.headers.authorization }), body: text ? JSON.parse(text) : undefined });
      if (request.method !== "POST" || !request.url?.endsWith("/responses")) {
        response.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "no such fixture" } }));
        return;
      }
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const events = responsesStream("thinking about it", words, { input: 50, output: words.length });
      let index = 0;
      const timer = setInterval(() => {
        const event = events[index++];
        if (event === undefined) {
          clearInterval(timer);
          response.end();
        } else response.write(event);
      }, eventMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
