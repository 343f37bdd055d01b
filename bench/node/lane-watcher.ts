import WebSocket from "ws";

// One WebSocket watcher of a lane for P7, as thin as a client can be: it timestamps every message
// on arrival (Node's Date.now(), the same machine clock the server stamps entries with), counts
// the bytes it received, and keeps the arrival times of `entry_added` events with the entry's own
// commit timestamp. It acknowledges what it received every 1 MiB, as the API asks.
//
// It uses the `ws` package rather than Node's built-in WebSocket (undici's): the 500 watchers run
// on the same two cores as the server, and undici spent ~100 µs of CPU per received frame
// (measured: ~2 s of the bench process's CPU per answer to 500 watchers), so the client's own
// parsing, not the server's delivery, decided when the last watcher saw an event. Browsers, the
// real watchers, each parse only their own stream on their own machine.

const ACK_EVERY_BYTES = 1024 * 1024;
const OPEN_TIMEOUT_MS = 30_000;

export interface EntryArrival {
  entryId: string;
  /** The entry's `timestamp`: when the session object committed it. */
  committedAt: number;
  receivedAt: number;
}

interface Message {
  type: string;
  event?: { type: string; entry?: { id: string; timestamp: number } };
}
type Frame = Message & { messages?: Message[] };

export class LaneWatcher {
  bytes = 0;
  /** WebSocket frames received (a batch frame counts once). */
  frames = 0;
  readonly arrivals: EntryArrival[] = [];
  private acknowledged = 0;
  private readonly ws: WebSocket;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on("message", (data, isBinary) => {
      const receivedAt = Date.now();
      if (isBinary || !Buffer.isBuffer(data)) return;
      this.bytes += data.length;
      this.frames++;
      // Only frames with entry events are parsed; the marker is searched in the raw bytes.
      if (data.includes('"entry_added"')) {
        const frame: Frame = JSON.parse(data.toString("utf8"));
        for (const message of frame.type === "batch" ? (frame.messages ?? []) : [frame]) {
          const entry = message.event?.type === "entry_added" ? message.event.entry : undefined;
          if (entry) this.arrivals.push({ entryId: entry.id, committedAt: entry.timestamp, receivedAt });
        }
      }
      if (this.bytes - this.acknowledged >= ACK_EVERY_BYTES) {
        this.acknowledged = this.bytes;
        ws.send(JSON.stringify({ type: "ack", bytes: this.bytes }));
      }
    });
  }

  /**
   * Opens `…/lanes/{lane}/watch?batch=true` (batch frames, as the SDK's watchLane asks for),
   * authenticated by the `bearer.<key>` subprotocol; resolves on the first snapshot.
   */
  static async open(baseUrl: string, key: string, sessionId: string, lane: string): Promise<LaneWatcher> {
    const url = `${baseUrl.replace(/^http/, "ws")}/v1/sessions/${sessionId}/lanes/${lane}/watch?batch=true`;
    const ws = new WebSocket(url, [`bearer.${key}`], { perMessageDeflate: false });
    const watcher = new LaneWatcher(ws);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("watch socket: no snapshot in time")), OPEN_TIMEOUT_MS);
      ws.once("message", () => (clearTimeout(timer), resolve()));
      ws.once("close", (code, reason) => (clearTimeout(timer), reject(new Error(`watch socket closed: ${code} ${reason.toString()}`))));
      ws.once("error", (error) => (clearTimeout(timer), reject(error)));
    });
    return watcher;
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  close(): void {
    this.ws.close();
  }
}
