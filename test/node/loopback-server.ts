import type { IncomingMessage, Server, ServerResponse } from "node:http";

// What the Node-side test servers (tool webhook, webhook receiver, MCP server) share: a listen on
// a free loopback port and a close that does not wait for the answers a test left hanging.

export interface LoopbackServer {
  url: string;
  close: () => Promise<void>;
}

/** Listens on 127.0.0.1 at a free port; `close` destroys the held responses first. */
export async function listenOnLoopback(server: Server, held: Iterable<ServerResponse>): Promise<LoopbackServer> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of held) response.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A request's whole body as UTF-8 text. */
export function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}
