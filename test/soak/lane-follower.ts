import type { LaneWatchMessage } from "../../schema/watch.ts";
import { parseSseBlocks, type SseItem } from "../helpers/sse-reader.ts";
import type { SoakClient } from "./cluster.ts";
import { sleep } from "./cluster.ts";
import type { Ledger } from "./ledger.ts";

// An SSE watcher of one lane that follows it across kills: it reconnects with Last-Event-ID, so
// it sees every event the lane retained. It hands the ledger what each `operation_abort` event
// drained (the witness for an abort whose HTTP answer a kill swallowed) and counts the times it had
// to start again from a snapshot (a gap: events it could not see).

export class LaneFollower {
  events = 0;
  reconnects = 0;
  gaps = 0;
  private lastEventId: string | undefined;
  private stopped = false;
  private opened = false;
  private controller: AbortController | undefined;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly client: SoakClient,
    private readonly ledger: Ledger,
    readonly sessionId: string,
    readonly lane: string,
  ) {}

  start(): void {
    this.loop = this.follow();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.controller?.abort();
    await this.loop;
  }

  private async follow(): Promise<void> {
    while (!this.stopped) {
      this.controller = new AbortController();
      try {
        if (await this.readOnce(this.controller.signal)) this.reconnects++;
      } catch {
        // The server died under the stream, or is not up yet: try again below.
        if (this.opened) this.reconnects++;
      }
      this.opened = false;
      if (this.stopped) return;
      await sleep(300);
    }
  }

  /** Reads one stream to its end; true when it was open (a reconnect follows). */
  private async readOnce(signal: AbortSignal): Promise<boolean> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.client.token}`, accept: "text/event-stream" };
    if (this.lastEventId !== undefined) headers["last-event-id"] = this.lastEventId;
    const response = await fetch(`${this.client.baseUrl}/v1/sessions/${this.sessionId}/lanes/${this.lane}/events`, { headers, signal });
    if (response.status !== 200 || !response.body) {
      await response.body?.cancel();
      return false;
    }
    this.opened = true;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const read = await reader.read();
      if (read.done) return true;
      const items: SseItem[] = [];
      buffer = parseSseBlocks(buffer + decoder.decode(read.value, { stream: true }), items);
      for (const item of items) this.take(item);
    }
  }

  private take(item: SseItem): void {
    if (item.event === "comment") return;
    const resumed = this.lastEventId !== undefined;
    if (item.id !== undefined && item.id !== "") this.lastEventId = item.id;
    const message: LaneWatchMessage = JSON.parse(item.data);
    if (message.type === "snapshot") {
      if (resumed) this.gaps++;
      return;
    }
    if (message.type !== "event") return;
    this.events++;
    if (message.event.type === "operation_abort") this.ledger.handBack(message.event.operationId, [...message.event.steer, ...message.event.followUp]);
  }
}
