import { exports } from "cloudflare:workers";
import type { LaneSnapshot, WatchSocket } from "../../client/index.ts";

// WebSocket implementations for watchLane tests, both with the browser surface the SDK expects
// (constructor(url, protocols), readyState, send, close, open/message/close/error events).

type SocketEvents = { open: Event; message: MessageEvent; close: CloseEvent; error: Event };

/** A scripted socket: the test plays the server (`open`, `deliver`, `serverClose`) and reads `sent`. */
export class FakeSocket extends EventTarget<SocketEvents> implements WatchSocket {
  static instances: FakeSocket[] = [];
  readyState = 0;
  readonly sent: string[] = [];
  closedWith: { code?: number; reason?: string } | undefined;

  constructor(
    readonly url: string,
    readonly protocols?: string | string[],
  ) {
    super();
    FakeSocket.instances.push(this);
  }

  static reset(): void {
    FakeSocket.instances = [];
  }

  static latest(): FakeSocket {
    const socket = FakeSocket.instances.at(-1);
    if (!socket) throw new Error("No socket was created");
    return socket;
  }

  send(data: string): void {
    if (this.readyState !== 1) throw new Error("not open");
    this.sent.push(data);
  }

  close(code?: number, reason?: string): void {
    this.closedWith = { ...(code !== undefined && { code }), ...(reason !== undefined && { reason }) };
    this.readyState = 3;
  }

  open(): this {
    this.readyState = 1;
    this.dispatchEvent(new Event("open"));
    return this;
  }

  deliver(message: unknown): this {
    this.dispatchEvent(new MessageEvent("message", { data: typeof message === "string" ? message : JSON.stringify(message) }));
    return this;
  }

  /** A refused upgrade as Node 22's built-in WebSocket reports it: an error event, and no close. */
  failToConnect(): void {
    this.readyState = 3;
    this.dispatchEvent(new Event("error"));
  }

  serverClose(code: number, reason = ""): void {
    this.readyState = 3;
    this.dispatchEvent(new CloseEvent("close", { code, reason }));
  }

  /** The resnapshot requests this socket sent. */
  resnapshots(): number {
    return this.sent.filter((text) => text === JSON.stringify({ type: "resnapshot" })).length;
  }
}

/**
 * A real socket to the app in workerd, presented like a browser WebSocket: the constructor runs the
 * upgrade through `exports.default.fetch` with the offered subprotocols (as a browser would send
 * them), accepts the client end, and forwards its events.
 */
export class WorkerdWebSocket extends EventTarget<SocketEvents> implements WatchSocket {
  static opened: WorkerdWebSocket[] = [];
  readyState = 0;
  /** The subprotocol the server selected in its 101. */
  protocol = "";
  private socket: WebSocket | undefined;

  constructor(url: string, protocols?: string | string[]) {
    super();
    WorkerdWebSocket.opened.push(this);
    void this.connect(url.replace(/^ws/, "http"), typeof protocols === "string" ? [protocols] : (protocols ?? []));
  }

  private async connect(url: string, protocols: string[]): Promise<void> {
    let response: Response;
    try {
      response = await exports.default.fetch(url, { headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": protocols.join(", ") } });
    } catch {
      return this.fail();
    }
    const socket = response.webSocket;
    if (response.status !== 101 || !socket) return this.fail();
    this.protocol = response.headers.get("Sec-WebSocket-Protocol") ?? "";
    socket.accept();
    this.socket = socket;
    socket.addEventListener("message", (event) => this.dispatchEvent(new MessageEvent("message", { data: event.data })));
    socket.addEventListener("close", (event) => {
      this.readyState = 3;
      this.dispatchEvent(new CloseEvent("close", { code: event.code, reason: event.reason }));
    });
    socket.addEventListener("error", () => this.dispatchEvent(new Event("error")));
    if (this.readyState !== 0) {
      // Closed by the caller while the upgrade was running.
      socket.close(1000, "closed");
      return;
    }
    this.readyState = 1;
    this.dispatchEvent(new Event("open"));
  }

  private fail(): void {
    this.readyState = 3;
    this.dispatchEvent(new Event("error"));
    this.dispatchEvent(new CloseEvent("close", { code: 1006, reason: "upgrade failed" }));
  }

  send(data: string): void {
    if (!this.socket || this.readyState !== 1) throw new Error("not open");
    this.socket.send(data);
  }

  close(code?: number, reason?: string): void {
    if (this.readyState >= 2) return;
    this.readyState = 2;
    this.socket?.close(code, reason);
  }
}

/** Polls `check` until it holds (bounded): for state reached through sockets and timers. */
export async function eventually(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A lane snapshot of a new lane (no entries, idle), with `overrides`: what a scripted server sends first. */
export function laneSnapshot(overrides: Partial<LaneSnapshot> = {}): LaneSnapshot {
  return {
    lane: "main",
    tipId: null,
    transcript: [],
    configuration: { model: { provider: "scripted", modelId: "echo" }, thinkingLevel: "off", activeToolNames: [] },
    stats: {
      messageCount: 0,
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    },
    operation: null,
    queues: [],
    faulted: false,
    ...overrides,
  };
}

/** watchLane's options for a scripted socket: the lane `main` of session `s1`, quick reconnects, no pings. */
export const SCRIPTED_WATCH = {
  baseUrl: "http://api.test/",
  key: "sk_t_key",
  sessionId: "s1",
  lane: "main",
  WebSocket: FakeSocket,
  backoff: { initialMs: 10, maxMs: 40 },
  pingIntervalMs: 0,
};

/** What a command's promise settled with: its value or its rejection. */
export const settled = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => value,
    (error: unknown) => error,
  );
