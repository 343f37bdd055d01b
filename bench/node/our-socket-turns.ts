import WebSocket from "ws";

// P1's socket row, our side: one turn = a `prompt` command on an open lane watch socket
// (docs/api-watch.md "Commands on the socket"), answered when its `run_end` event arrives — the
// same moment the peer's `done` frame marks (its answer persisted). The `ws` package, like the
// peer's lean client. It acknowledges what it received as the protocol asks.

const ACK_EVERY_BYTES = 1024 * 1024;
const OPEN_TIMEOUT_MS = 30_000;
const TURN_TIMEOUT_MS = 30_000;

interface Message {
  type: string;
  id?: string;
  status?: number;
  body?: { operationId?: string };
  event?: { type: string; runId?: string; status?: string };
}
type Frame = Message & { messages?: Message[] };

export class SocketTurns {
  private bytes = 0;
  private acknowledged = 0;
  private counter = 0;
  /** Runs whose `run_end` arrived, with their status (a reply may come after its run's end). */
  private readonly ended = new Map<string, string>();
  private readonly waiters = new Set<() => void>();
  private readonly replies = new Map<string, Message>();

  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (data, isBinary) => {
      if (isBinary || !Buffer.isBuffer(data)) return;
      this.bytes += data.length;
      const frame: Frame = JSON.parse(data.toString("utf8"));
      for (const message of frame.type === "batch" ? (frame.messages ?? []) : [frame]) {
        if (message.type === "reply" && message.id !== undefined) this.replies.set(message.id, message);
        const event = message.event;
        if (event?.type === "run_end" && event.runId !== undefined) this.ended.set(event.runId, event.status ?? "");
      }
      if (this.bytes - this.acknowledged >= ACK_EVERY_BYTES) {
        this.acknowledged = this.bytes;
        ws.send(JSON.stringify({ type: "ack", bytes: this.bytes }));
      }
      for (const wake of [...this.waiters]) wake();
    });
  }

  static async open(baseUrl: string, key: string, sessionId: string): Promise<SocketTurns> {
    const url = `${baseUrl.replace(/^http/, "ws")}/v1/sessions/${sessionId}/lanes/main/watch?batch=true`;
    const ws = new WebSocket(url, [`bearer.${key}`], { perMessageDeflate: false });
    const turns = new SocketTurns(ws);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("socket turns: no snapshot in time")), OPEN_TIMEOUT_MS);
      ws.once("message", () => (clearTimeout(timer), resolve()));
      ws.once("close", (code, reason) => (clearTimeout(timer), reject(new Error(`socket closed: ${code} ${reason.toString()}`))));
      ws.once("error", (error) => (clearTimeout(timer), reject(error)));
    });
    return turns;
  }

  /** One turn: the prompt frame, its 202 reply, and its run's end (completed). */
  async turn(prompt: string): Promise<void> {
    const id = `t${++this.counter}`;
    this.ws.send(JSON.stringify({ type: "prompt", id, prompt }));
    const operationId = await this.until(() => {
      const reply = this.replies.get(id);
      if (!reply) return undefined;
      if (reply.status !== 202 || !reply.body?.operationId) throw new Error(`prompt frame answered ${reply.status}: ${JSON.stringify(reply.body)}`);
      return reply.body.operationId;
    });
    this.replies.delete(id);
    const status = await this.until(() => this.ended.get(operationId));
    this.ended.delete(operationId);
    if (status !== "completed") throw new Error(`socket turn ended ${status}`);
  }

  private until<T>(found: () => T | undefined): Promise<T> {
    const now = found();
    if (now !== undefined) return Promise.resolve(now);
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => (this.waiters.delete(check), reject(new Error("socket turn: no answer in time"))), TURN_TIMEOUT_MS);
      const check = (): void => {
        try {
          const value = found();
          if (value === undefined) return;
          clearTimeout(timer);
          this.waiters.delete(check);
          resolve(value);
        } catch (error) {
          clearTimeout(timer);
          this.waiters.delete(check);
          reject(error);
        }
      };
      this.waiters.add(check);
    });
  }

  close(): void {
    this.ws.close();
  }
}
