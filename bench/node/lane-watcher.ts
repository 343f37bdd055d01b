// One WebSocket watcher of a lane for P7, as thin as a client can be: it timestamps every message
// on arrival (Node's Date.now(), the same machine clock the server stamps entries with), counts
// the bytes it received, and keeps the arrival times of `entry_added` events with the entry's own
// commit timestamp. It acknowledges what it received every 1 MiB, as the API asks.

const ACK_EVERY_BYTES = 1024 * 1024;
const OPEN_TIMEOUT_MS = 30_000;

export interface EntryArrival {
  entryId: string;
  /** The entry's `timestamp`: when the session object committed it. */
  committedAt: number;
  receivedAt: number;
}

export class LaneWatcher {
  bytes = 0;
  readonly arrivals: EntryArrival[] = [];
  private acknowledged = 0;
  private readonly ws: WebSocket;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.addEventListener("message", (event) => {
      const receivedAt = Date.now();
      const text = typeof event.data === "string" ? event.data : "";
      this.bytes += Buffer.byteLength(text);
      if (text.includes('"entry_added"')) {
        const message: { type: string; event?: { type: string; entry?: { id: string; timestamp: number } } } = JSON.parse(text);
        const entry = message.event?.type === "entry_added" ? message.event.entry : undefined;
        if (entry) this.arrivals.push({ entryId: entry.id, committedAt: entry.timestamp, receivedAt });
      }
      if (this.bytes - this.acknowledged >= ACK_EVERY_BYTES) {
        this.acknowledged = this.bytes;
        ws.send(JSON.stringify({ type: "ack", bytes: this.bytes }));
      }
    });
  }

  /** Opens `…/lanes/{lane}/watch`, authenticated by the `bearer.<key>` subprotocol; resolves on the first snapshot. */
  static async open(baseUrl: string, key: string, sessionId: string, lane: string): Promise<LaneWatcher> {
    const ws = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/v1/sessions/${sessionId}/lanes/${lane}/watch`, [`bearer.${key}`]);
    const watcher = new LaneWatcher(ws);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("watch socket: no snapshot in time")), OPEN_TIMEOUT_MS);
      ws.addEventListener("message", () => (clearTimeout(timer), resolve()), { once: true });
      ws.addEventListener("close", (event) => (clearTimeout(timer), reject(new Error(`watch socket closed: ${event.code} ${event.reason}`))), { once: true });
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
