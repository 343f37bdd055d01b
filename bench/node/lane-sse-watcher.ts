import { request, Agent, type IncomingMessage } from "node:http";
import type { EntryArrival } from "./lane-watcher.ts";

// One SSE reader of a lane for P14 (`GET …/lanes/{lane}/events`), the counterpart of P7's socket
// watcher (lane-watcher.ts) and as thin: node:http, every chunk timestamped on arrival, only the
// `entry_added` events parsed (their entry's commit timestamp against the arrival time).

const OPEN_TIMEOUT_MS = 30_000;
/** One connection per stream: the pool must never queue a stream behind another. */
const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

export class LaneSseWatcher {
  bytes = 0;
  /** Body chunks received (SSE has no frames; the closest count). */
  frames = 0;
  readonly arrivals: EntryArrival[] = [];
  private buffer = "";
  private ended = false;

  private constructor(private readonly response: IncomingMessage) {
    response.setEncoding("utf8");
    response.on("data", (chunk: string) => {
      const receivedAt = Date.now();
      this.bytes += Buffer.byteLength(chunk);
      this.frames++;
      this.buffer += chunk;
      let end = this.buffer.indexOf("\n\n");
      while (end >= 0) {
        const block = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        if (block.includes('"entry_added"')) this.read(block, receivedAt);
        end = this.buffer.indexOf("\n\n");
      }
    });
    response.on("end", () => (this.ended = true));
    response.on("close", () => (this.ended = true));
  }

  private read(block: string, receivedAt: number): void {
    const data = block.split("\n").find((line) => line.startsWith("data: "));
    if (!data) return;
    const message: { event?: { type?: string; entry?: { id: string; timestamp: number } } } = JSON.parse(data.slice("data: ".length));
    const entry = message.event?.type === "entry_added" ? message.event.entry : undefined;
    if (entry) this.arrivals.push({ entryId: entry.id, committedAt: entry.timestamp, receivedAt });
  }

  /** Opens the stream; resolves once its first event (the snapshot) arrived. */
  static open(baseUrl: string, key: string, sessionId: string, lane: string): Promise<LaneSseWatcher> {
    return new Promise((resolve, reject) => {
      const url = new URL(`/v1/sessions/${sessionId}/lanes/${lane}/events`, baseUrl);
      const timer = setTimeout(() => reject(new Error("SSE stream: no snapshot in time")), OPEN_TIMEOUT_MS);
      const outgoing = request(url, { agent, headers: { authorization: `Bearer ${key}`, accept: "text/event-stream" } }, (response) => {
        if (response.statusCode !== 200) {
          clearTimeout(timer);
          reject(new Error(`SSE stream refused: ${response.statusCode}`));
          return;
        }
        const watcher = new LaneSseWatcher(response);
        response.once("data", () => {
          clearTimeout(timer);
          resolve(watcher);
        });
      });
      outgoing.on("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
      outgoing.end();
    });
  }

  get open(): boolean {
    return !this.ended;
  }

  close(): void {
    this.response.destroy();
  }
}
