import { DurableObject } from "cloudflare:workers";

// The floor of P14: how soon one object's event can reach 500 clients on this runtime at all,
// with nothing of the product in the way (no session, no harness, no flow control, no parsing).
// Three topologies, each the bare minimum of its kind:
// - `/sockets`: the object's hibernatable WebSockets, written by the object (P7's topology);
// - `/object-sse`: Server-Sent Events responses held open by the object itself (the topology the
//   product rules out: an object holding open responses never hibernates);
// - `/relay-sse`: Server-Sent Events responses held by the front worker, each fed by its own
//   hibernatable socket to the object (P14's topology: the product's `GET …/events`).
// `POST /send?to=<topology>&slice=n` stamps one event with the machine's clock and sends it to
// every client of that topology, n clients a turn (the product's own slicing), for
// bench/node/sse-floor.ts to time its arrivals.

interface FloorEnv {
  FloorHub: DurableObjectNamespace<FloorHub>;
}

const encoder = new TextEncoder();
const SSE_HEADERS = { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache" } as const;
/** About the size of the events of a P14 answer (1.8 KB), so each write carries what the product's do. */
const PADDING = "x".repeat(1_750);
/** Sent on connecting, so a client knows it is in the audience before the first event. */
const OPENED = encoder.encode(": open\n\n");

const stamped = (sentAt: number): Uint8Array => encoder.encode(`event: event\ndata: {"sentAt":${sentAt},"padding":"${PADDING}"}\n\n`);

export class FloorHub extends DurableObject<FloorEnv> {
  /** The open responses of `/object-sse`. */
  private readonly held = new Set<WritableStreamDefaultWriter<Uint8Array>>();

  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    // A relay's socket is tagged apart from the clients' own, so each topology is sent to alone.
    if (url.pathname === "/sockets") return this.acceptSocket(url.searchParams.get("for") === "relay-sse" ? "relay-sse" : "sockets");
    if (url.pathname === "/object-sse") return this.holdStream();
    if (url.pathname === "/send") return this.send(url.searchParams.get("to") ?? "", Number(url.searchParams.get("slice") ?? "25"));
    return new Response("not found", { status: 404 });
  }

  private acceptSocket(tag: "sockets" | "relay-sse"): Response {
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, [tag]);
    server.send(OPENED);
    return new Response(null, { status: 101, webSocket: client });
  }

  private holdStream(): Response {
    const pipe = new IdentityTransformStream();
    const writer = pipe.writable.getWriter();
    this.held.add(writer);
    this.write(writer, OPENED);
    return new Response(pipe.readable, { headers: SSE_HEADERS });
  }

  private write(writer: WritableStreamDefaultWriter<Uint8Array>, bytes: Uint8Array): void {
    writer.write(bytes).catch(() => this.held.delete(writer));
  }

  /** One event to every client of topology `to`, `slice` of them a turn, as the product's hub sends a flush. */
  private send(to: string, slice: number): Response {
    const bytes = stamped(Date.now());
    const targets: ((bytes: Uint8Array) => void)[] =
      to === "object-sse" ? [...this.held].map((writer) => (event: Uint8Array) => this.write(writer, event)) : this.ctx.getWebSockets(to).map((ws) => (event: Uint8Array) => ws.send(event));
    let next = 0;
    const turn = () => {
      for (const end = Math.min(targets.length, next + Math.max(1, slice)); next < end; next++) {
        try {
          targets[next]?.(bytes);
        } catch {
          // A socket closing meanwhile: it is not in the audience any more.
        }
      }
      if (next < targets.length) setTimeout(turn, 0);
    };
    turn();
    return Response.json({ audience: targets.length });
  }

  override webSocketMessage(): void {
    // The clients send nothing the floor reads.
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // Already closed.
    }
  }
}

/** `/relay-sse`: the front worker's side of P14's topology, a socket to the object written to an SSE response. */
async function relayStream(hub: DurableObjectStub<FloorHub>): Promise<Response> {
  const upgraded = await hub.fetch("https://floor/sockets?for=relay-sse", { headers: { Upgrade: "websocket" } });
  const ws = upgraded.webSocket;
  if (!ws) return new Response("no socket", { status: 502 });
  const pipe = new IdentityTransformStream();
  const writer = pipe.writable.getWriter();
  ws.binaryType = "arraybuffer";
  ws.accept();
  ws.addEventListener("message", ({ data }) => {
    if (data instanceof ArrayBuffer) writer.write(new Uint8Array(data)).catch(() => undefined);
  });
  ws.addEventListener("close", () => writer.close().catch(() => undefined));
  // The client went away: so does its socket, and the object stops sending to it.
  writer.closed.catch(() => {
    try {
      ws.close(1000, "The client left");
    } catch {
      // The object closed it first.
    }
  });
  return new Response(pipe.readable, { headers: SSE_HEADERS });
}

export default {
  async fetch(request, env): Promise<Response> {
    const hub = env.FloorHub.get(env.FloorHub.idFromName("floor"));
    const path = new URL(request.url).pathname;
    if (path === "/relay-sse") return relayStream(hub);
    if (path === "/sockets" || path === "/object-sse" || path === "/send") return hub.fetch(request);
    if (path === "/ready") return new Response("ready");
    return new Response("not found", { status: 404 });
  },
} satisfies ExportedHandler<FloorEnv>;
