import { build } from "esbuild";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";

// The React example of docs/examples/ai-sdk-chat, built as its README says (esbuild: one ESM
// bundle, the automatic JSX runtime, React's production build) but into memory, and served from a
// loopback port of its own: a page on another origin than the API, as an application's page is.

const EXAMPLE = new URL("../../docs/examples/ai-sdk-chat/", import.meta.url);

/** The page's script: chat.tsx with React, react-dom, @ai-sdk/react and ai bundled in. */
export async function bundleChatPage(): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL("chat.tsx", EXAMPLE))],
    bundle: true,
    format: "esm",
    platform: "browser",
    jsx: "automatic",
    define: { "process.env.NODE_ENV": '"production"' },
    write: false,
    logLevel: "silent",
  });
  const [output] = result.outputFiles;
  if (!output) throw new Error("esbuild produced no bundle for chat.tsx");
  return output.text;
}

export interface ChatPageServer {
  /** `http://127.0.0.1:<port>`: the origin the API must allow (CORS_ORIGINS). */
  origin: string;
  /** The page's address with `query` (base, session, lane, token). */
  url(query: Record<string, string>): string;
  close(): Promise<void>;
}

/** Serves index.html at `/` and the bundle at `/chat.js`; anything else is 404. */
export async function serveChatPage(): Promise<ChatPageServer> {
  const html = readFileSync(new URL("index.html", EXAMPLE), "utf8");
  const script = await bundleChatPage();
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://page").pathname;
    if (path === "/" || path === "/index.html") return response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html);
    if (path === "/chat.js") return response.writeHead(200, { "content-type": "text/javascript; charset=utf-8" }).end(script);
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("The page server has no port");
  const origin = `http://127.0.0.1:${address.port}`;
  return {
    origin,
    url: (query) => `${origin}/?${new URLSearchParams(query)}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
