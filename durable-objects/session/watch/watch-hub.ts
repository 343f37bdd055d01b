import type { AgentHarness } from "../../../harness/runtime/harness.ts";
import type { EventFeed } from "../../../harness/runtime/watch.ts";
import type { SessionMutator } from "../../../harness/session/mutation.ts";
import type { HarnessEvent } from "../../../schema/lane.ts";
import { utf8Length } from "../../../schema/utf8.ts";
import { inLaneStream, inSessionStream, WATCH_CLOSE, WATCH_UNACKED_WINDOW_BYTES, type WatchCloseCode } from "../../../schema/watch.ts";
import type { StreamId } from "../../../schema/watch-resume.ts";
import { EventWindow } from "./event-window.ts";
import { batchOf, outgoing, sseOf, type JsonOutgoing, type Outgoing } from "./watch-frames.ts";
import { WatchFlow, type WatchTarget } from "./watch-flow.ts";
import { liveUpdateIntervalFor } from "./watch-pacing.ts";
import { SEND_SLICE, SendQueue } from "./send-queue.ts";

export type { WatchTarget } from "./watch-flow.ts";

/** Tags let the platform list a lane's sockets (`lane:<name>`) or the session watchers. */
export const watchTags = (target: WatchTarget): string[] => (target.kind === "lane" ? ["watch", `lane:${target.lane}`] : ["watch", "session"]);

/** Seqs are reserved in blocks: one storage write per block (and per wake), never one per event. */
export const SEQ_BLOCK = 1024;
const SEQ_KEY = "watch.seq.reserved";

/**
 * The WebSocket hub of one SessionObject (ARCHITECTURE D13): which sockets watch what, the
 * per-session event counter, and the fan-out of the harness's event feed.
 *
 * Seq source: an in-memory counter over every event of the feed (whatever stream carries it),
 * with a high-water mark reserved in the object's KV storage a block ahead. A restarted object
 * (hibernation wake, eviction, deploy) continues from the reserved mark, so seqs never repeat and
 * keep increasing for sockets that survived; the jump is not a loss (the server never drops an
 * event from a live socket; it closes the socket instead).
 *
 * Hibernation: the in-memory registry and feed are gone after a restart. They are rebuilt from
 * `ctx.getWebSockets()` and the attachments when the next harness is created (any RPC, alarm or
 * socket message that needs it), before that harness can emit an event.
 */
export class WatchHub {
  private feed: { harness: AgentHarness; feed: EventFeed } | undefined;
  /** Registry of sockets past their first snapshot; undefined until loaded in this instance. */
  private watchers: { lanes: Map<string, Set<WebSocket>>; session: Set<WebSocket> } | undefined;
  /** Flow control of every socket this instance touched (restored from attachments on first use). */
  private readonly flows = new Map<WebSocket, WatchFlow>();
  /** Accepted in this instance, first snapshot not yet sent. */
  private readonly joining = new Set<WebSocket>();
  /** At most one resnapshot in flight per socket; requests meanwhile are answered by that one. */
  private readonly resnapshotting = new Set<WebSocket>();
  /** REST snapshot reads waiting for their boundary (failed when the feed is left). */
  private readonly reads = new Set<(error: Error) => void>();
  private seq = 0;
  private reserved = 0;
  /**
   * Events numbered but not sent yet. The feed delivers a batch one event per microtask; sending
   * on a zero-delay timer instead lets every event bound in the same task leave together, as one
   * `batch` frame on the sockets that asked for it (each send costs per frame, at both ends).
   */
  private outbox: { seq: number; event: HarnessEvent }[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  /** Flushed events still going out to a large audience, a slice of sockets a turn (send-queue.ts). */
  private readonly sending = new SendQueue<WebSocket>();
  /** Recent lane events, for relay sockets that resume a stream (event-window.ts). */
  private readonly window = new EventWindow();

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * A new harness exists: follow its feed (hosts call this before anyone else uses it). Every
   * event is numbered from the first one, watched or not, so a REST snapshot's seq and a socket's
   * event seqs always come from the same count.
   */
  attach(harness: AgentHarness): void {
    if (this.feed?.harness === harness) return;
    this.unfollow();
    this.follow(harness);
  }

  /** Before accepting a socket: follow `harness` (loading the registry of surviving sockets first). */
  prepare(harness: AgentHarness): void {
    this.follow(harness);
  }

  /**
   * A socket accepted right after `prepare(harness)`: writes its attachment, captures its snapshot
   * on the line and sends it at its place in the feed; events follow from there.
   */
  join(ws: WebSocket, target: WatchTarget, keyId: string, harness: AgentHarness, options: { batch?: boolean; relay?: { resume: StreamId | undefined; sse?: boolean }; commandsKeyHash?: string | undefined; tokenExpiresAt?: number | undefined } = {}): void {
    const { batch = false, relay, commandsKeyHash, tokenExpiresAt } = options;
    const flow = WatchFlow.open(ws, target, keyId, this.now(), { batch, commandsKeyHash, sse: relay?.sse === true, tokenExpiresAt });
    this.flows.set(ws, flow);
    if (relay && this.resume(ws, flow, target, harness, relay.resume)) return;
    this.joining.add(ws);
    this.capture(ws, target, harness, () => {
      this.joining.delete(ws);
      flow.markReady();
      this.add(ws, target);
    });
  }

  /** Who a socket is, for its commands: its target and the key hash that authorizes them (none: it may send none). */
  commander(ws: WebSocket): { target: WatchTarget; commandsKeyHash: string | undefined } | undefined {
    const flow = this.flow(ws);
    return flow && { target: flow.target, commandsKeyHash: flow.commandsKeyHash };
  }

  /**
   * A command's `reply` (watch/socket-commands.ts), sent like every server message: counted by flow
   * control (clients acknowledge every message's bytes), refused to a slow or expired socket.
   */
  reply(ws: WebSocket, reply: object): void {
    // Events flushed before the reply reach the socket before it, as when every flush went out at once.
    this.sending.finish();
    this.send(ws, outgoing(reply));
  }

  /**
   * A relay socket (the front worker's SSE stream, schema/watch-resume.ts): first the epoch frame;
   * then, when the window holds every event of the lane after the resumed id, those events, and the
   * socket joins the watchers at once (true). Synchronous from the flush on, so no event numbered
   * meanwhile is missed or repeated. False: the caller sends a snapshot as for any socket.
   */
  private resume(ws: WebSocket, flow: WatchFlow, target: WatchTarget, harness: AgentHarness, from: StreamId | undefined): boolean {
    this.follow(harness);
    this.flush();
    // A passing-through relay gets its ids already written (sseOf), so it needs no epoch.
    if (!flow.sse && !this.send(ws, outgoing({ type: "epoch", epoch: this.window.epoch }))) return true;
    const missed = from && target.kind === "lane" ? this.window.after(target.lane, from.epoch, from.seq) : undefined;
    if (!missed) return false;
    if (flow.sse) {
      if (missed.length > 0 && !this.send(ws, sseOf(this.window.epoch, missed.map(({ seq, event }) => ({ name: "event", seq, message: outgoing({ type: "event", seq, event }) }))))) return true;
    } else for (const { seq, event } of missed) if (!this.send(ws, outgoing({ type: "event", seq, event }))) return true;
    flow.markReady();
    this.add(ws, target);
    // As on a live stream (queueDeliveries): a passing-through relay resumed across a navigation
    // cannot ask for the snapshot its rebase needs, so it is sent one after the events. So it is
    // when it resumes from the navigation_end itself: the snapshot after it bears the same id, so
    // whether the client got it is not known (a second one does no harm).
    const rebased = missed.some(({ event }) => event.type === "navigation_end") || (from !== undefined && target.kind === "lane" && this.window.eventAt(target.lane, from.epoch, from.seq)?.type === "navigation_end");
    if (flow.sse && rebased) this.resnapshot(ws, harness);
    return true;
  }

  /** A client's resnapshot request: a fresh snapshot after which events continue from its seq. */
  resnapshot(ws: WebSocket, harness: AgentHarness): void {
    const flow = this.flow(ws);
    if (!flow?.ready) return;
    if (this.resnapshotting.has(ws) || this.joining.has(ws)) return;
    this.resnapshotting.add(ws);
    this.capture(ws, flow.target, harness, () => this.resnapshotting.delete(ws));
  }

  /**
   * A client message is about to be handled: false (and the socket closed) when the socket exceeds
   * its message rate (1008) or its state is unknown (1011). `ack`: the message is a well-formed
   * acknowledgement of that many bytes; one that moves the window on is not counted (WatchFlow).
   */
  admit(ws: WebSocket, ack?: number): boolean {
    // A socket this object closed (dropped, or closing): what it still sends is not served.
    if (!isOpen(ws)) return false;
    const flow = this.flow(ws);
    if (!flow) this.drop(ws, WATCH_CLOSE.internal, "Unknown watch state");
    else if (flow.tokenExpired(this.now())) this.drop(ws, WATCH_CLOSE.policy, "The browser token expired; reconnect with a fresh token");
    else if (flow.admitMessage(this.now(), ack)) return true;
    else this.drop(ws, WATCH_CLOSE.policy, "Too many messages: rate limited");
    return false;
  }

  /** `{"type":"ack","bytes":n}`: needs no harness, so an acknowledgement never opens the session. */
  acknowledge(ws: WebSocket, bytes: number): void {
    const flow = this.flow(ws);
    if (!flow) return this.drop(ws, WATCH_CLOSE.internal, "Unknown watch state");
    if (flow.acknowledge(bytes) === "beyond_sent") this.drop(ws, WATCH_CLOSE.policy, "Acknowledged more bytes than were sent");
  }

  /** The spacing of a lane's live updates, widened as its audience grows (watch-pacing.ts). */
  liveUpdateIntervalMs(lane: string): number {
    return liveUpdateIntervalFor(this.watchers?.lanes.get(lane)?.size ?? 0);
  }

  /** Closes (1008) every socket opened with `keyId`, for a revoked key; returns how many. */
  closeKey(keyId: string): number {
    let closed = 0;
    for (const ws of this.ctx.getWebSockets("watch")) {
      if (this.flow(ws)?.keyId !== keyId) continue;
      this.drop(ws, WATCH_CLOSE.policy, "The API key was revoked");
      closed++;
    }
    return closed;
  }

  /**
   * A snapshot with its place in the event counter, for REST readers (`GET …/snapshot`): events
   * with larger seqs are exactly the ones bound after it.
   */
  snapshot<T>(harness: AgentHarness, read: (m: SessionMutator) => T): Promise<{ seq: number; snapshot: T }> {
    const feed = this.follow(harness);
    return new Promise((resolve, reject) => {
      const abandon = (error: Error) => reject(error);
      this.reads.add(abandon);
      const atBoundary = (snapshot: T) => {
        this.reads.delete(abandon);
        resolve({ seq: this.seq, snapshot });
      };
      feed.capture(read, atBoundary).catch((error: unknown) => {
        this.reads.delete(abandon);
        reject(error);
      });
    });
  }

  /** The socket is gone (closed, errored or dropped). */
  forget(ws: WebSocket): void {
    this.flows.delete(ws);
    this.joining.delete(ws);
    this.resnapshotting.delete(ws);
    if (!this.watchers) return;
    this.watchers.session.delete(ws);
    for (const [lane, sockets] of this.watchers.lanes) {
      if (sockets.delete(ws) && sockets.size === 0) this.watchers.lanes.delete(lane);
    }
  }

  /**
   * Closes a socket for good. Its attachment is cleared first: a frame the client sent before the
   * close reached it still arrives, and must find no state to be served with (a revoked key's
   * command would otherwise run, rebuilt from the attachment by `flow`).
   */
  private drop(ws: WebSocket, code: WatchCloseCode, reason: string): void {
    this.forget(ws);
    WatchFlow.retire(ws);
    close(ws, code, reason);
  }

  private flow(ws: WebSocket): WatchFlow | undefined {
    let flow = this.flows.get(ws);
    if (!flow) {
      flow = WatchFlow.restore(ws, this.now());
      if (flow) this.flows.set(ws, flow);
    }
    return flow;
  }

  private capture(ws: WebSocket, target: WatchTarget, harness: AgentHarness, sent: () => void): void {
    const feed = this.follow(harness);
    const read = (m: SessionMutator) => {
      if (target.kind === "session") return harness.captureSessionSnapshot(m);
      const lane = harness.getLane(target.lane);
      if (!lane) throw new Error(`Lane "${target.lane}" does not exist`);
      return lane.captureSnapshot(m);
    };
    const atBoundary = (snapshot: ReturnType<typeof read>) => {
      // Watchers get every event numbered before the snapshot first, so frames stay in seq order.
      this.flush();
      if (!isOpen(ws)) return this.forget(ws);
      const message = outgoing({ type: "snapshot", seq: this.seq, snapshot });
      if (!this.send(ws, this.flow(ws)?.sse ? sseOf(this.window.epoch, [{ name: "snapshot", seq: this.seq, message }]) : message)) return;
      sent();
    };
    feed.capture(read, atBoundary).catch((error: unknown) => {
      this.drop(ws, WATCH_CLOSE.internal, `Snapshot failed: ${error instanceof Error ? error.message : String(error)}`);
    });
  }

  /** The feed of `harness`, opened (with the registry and counter loaded) on first need. */
  private follow(harness: AgentHarness): EventFeed {
    if (this.feed?.harness === harness) return this.feed.feed;
    this.unfollow();
    this.load();
    // A new harness may not share the old one's state: ids numbered before are not resumed. Its
    // storage may have been wiped too (a session deleted and created again in this instance), mark
    // included: the next numbered event reserves again, so seqs keep increasing after a restart.
    this.window.restart(this.seq);
    this.reserved = this.seq;
    const feed = harness.openFeed((event) => this.publish(event));
    this.feed = { harness, feed };
    return feed;
  }

  /**
   * Leaves a replaced harness's feed (it faulted and was reopened). Captures still waiting for
   * their place there never get it, and sockets that folded its events cannot fold the new one's
   * (its state may differ: a fault cleared on reopening): every socket reconnects for a fresh
   * snapshot (1012), as one that never had one.
   */
  private unfollow(): void {
    if (!this.feed) return;
    this.flush();
    this.feed.feed.close();
    this.feed = undefined;
    this.resnapshotting.clear();
    // The sockets that followed the replaced feed (registered, or waiting for their snapshot), not
    // one accepted since for the new harness.
    const followed = this.watchers ? [...this.watchers.session, ...[...this.watchers.lanes.values()].flatMap((sockets) => [...sockets])] : [];
    for (const ws of [...this.joining, ...followed]) this.drop(ws, WATCH_CLOSE.restart, "The session restarted; reconnect");
    this.joining.clear();
    for (const abandon of this.reads) abandon(new Error("The session restarted during the snapshot"));
    this.reads.clear();
  }

  private load(): void {
    if (this.watchers) return;
    this.watchers = { lanes: new Map(), session: new Set() };
    const stored: unknown = this.ctx.storage.kv.get(SEQ_KEY);
    this.reserved = typeof stored === "number" && Number.isSafeInteger(stored) && stored > 0 ? stored : 0;
    // The first numbered event reserves the next block; an instance that numbers none writes nothing.
    this.seq = this.reserved;
    for (const ws of this.ctx.getWebSockets("watch")) {
      if (this.joining.has(ws) || !isOpen(ws)) continue;
      const flow = this.flow(ws);
      if (!flow) this.drop(ws, WATCH_CLOSE.internal, "Unknown watch state");
      else if (!flow.ready) this.drop(ws, WATCH_CLOSE.restart, "Restarted before the snapshot; reconnect");
      else this.add(ws, flow.target);
    }
  }

  private add(ws: WebSocket, target: WatchTarget): void {
    const watchers = this.watchers;
    if (!watchers) return;
    if (target.kind === "session") {
      watchers.session.add(ws);
      return;
    }
    const sockets = watchers.lanes.get(target.lane) ?? new Set<WebSocket>();
    sockets.add(ws);
    watchers.lanes.set(target.lane, sockets);
  }

  /** Numbers every event of the feed; it goes out with the next flush. */
  private publish(event: HarnessEvent): void {
    const seq = this.next();
    this.window.retain(seq, event);
    const watchers = this.watchers;
    // Nobody watching: nothing to serialize or send (the seq is still taken).
    if (!watchers || (watchers.session.size === 0 && watchers.lanes.size === 0)) return;
    this.outbox.push({ seq, event });
    this.flushTimer ??= setTimeout(() => this.flush(SEND_SLICE), 0);
  }

  /**
   * Sends the pending events to the sockets whose stream carries them, in seq order: one frame per
   * event, or one `batch` frame holding them all for a socket that asked for batches. Each event is
   * serialized once, and each stream's batch once, whatever the number of sockets.
   *
   * The feed's own flush (its zero-delay timer) sends to at most `slice` sockets a turn, the rest in
   * later turns (send-queue.ts). Every other caller needs everything numbered so far sent before
   * what it sends next (a snapshot, a resumed stream, a replaced feed), so by default a flush
   * finishes what earlier slices left too.
   */
  private flush(slice = Number.POSITIVE_INFINITY): void {
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const pending = this.outbox;
    this.outbox = [];
    const watchers = this.watchers;
    if (watchers && pending.length > 0) this.queueDeliveries(watchers, pending);
    this.sending.run(slice);
  }

  private queueDeliveries(watchers: NonNullable<WatchHub["watchers"]>, pending: { seq: number; event: HarnessEvent }[]): void {
    const messages = new Map<number, JsonOutgoing>();
    const messageOf = ({ seq, event }: { seq: number; event: HarnessEvent }): JsonOutgoing => {
      let message = messages.get(seq);
      if (!message) messages.set(seq, (message = outgoing({ type: "event", seq, event })));
      return message;
    };
    const deliver = (sockets: Set<WebSocket>, carried: { seq: number; event: HarnessEvent }[]) => {
      if (carried.length === 0 || sockets.size === 0) return;
      const frames = carried.map(messageOf);
      let batch: Outgoing | undefined;
      let sse: Outgoing | undefined;
      // A navigation rebases the lane: a passing-through relay cannot ask for the fresh snapshot a
      // client would ask for, so it is sent one (as a `snapshot` event of its stream). It gets the
      // events up to the navigation_end, then none until that snapshot (which covers them): its
      // stream never holds an id between the two, so a resume from any id it holds can tell
      // whether the rebase snapshot is owed (resume).
      const rebaseAt = carried.findLastIndex(({ event }) => event.type === "navigation_end");
      const toRelay = rebaseAt < 0 ? carried : carried.slice(0, rebaseAt + 1);
      const send = (ws: WebSocket) => {
        const flow = this.flow(ws);
        if (flow?.sse) {
          if (this.resnapshotting.has(ws)) return;
          sse ??= sseOf(this.window.epoch, toRelay.map((item) => ({ name: "event", seq: item.seq, message: messageOf(item) })));
          if (this.send(ws, sse) && rebaseAt >= 0 && this.feed) this.resnapshot(ws, this.feed.harness);
        } else if (frames.length > 1 && flow?.batch) this.send(ws, (batch ??= batchOf(frames)));
        else for (const frame of frames) if (!this.send(ws, frame)) break;
      };
      // The audience as it is now: a socket that joins later starts from its snapshot, after these.
      this.sending.push(sockets, send);
    };
    deliver(watchers.session, pending.filter(({ event }) => inSessionStream(event)));
    for (const [lane, sockets] of watchers.lanes) deliver(sockets, pending.filter(({ event }) => inLaneStream(event, lane)));
  }

  private next(): number {
    this.seq++;
    if (this.seq >= this.reserved) this.reserve();
    return this.seq;
  }

  private reserve(): void {
    this.reserved = this.seq + SEQ_BLOCK;
    try {
      this.ctx.storage.kv.put(SEQ_KEY, this.reserved);
    } catch {
      // Storage refused (a faulted or deleted session): seqs stay monotonic within this instance.
    }
  }

  /** Sends, or drops a socket that is closed, broken, too old or too far behind. */
  private send(ws: WebSocket, message: Outgoing): boolean {
    const flow = this.flow(ws);
    if (!isOpen(ws) || !flow) {
      this.forget(ws);
      return false;
    }
    const verdict = flow.beforeSend(this.now());
    if (verdict === "slow") {
      this.drop(ws, WATCH_CLOSE.slowConsumer, `Slow consumer: more than ${WATCH_UNACKED_WINDOW_BYTES} bytes unacknowledged`);
      return false;
    }
    if (verdict === "token_expired") {
      this.drop(ws, WATCH_CLOSE.policy, "The browser token expired; reconnect with a fresh token");
      return false;
    }
    if (verdict === "expired") {
      this.drop(ws, WATCH_CLOSE.maxAge, "The socket reached its maximum age; reconnect");
      return false;
    }
    try {
      ws.send("binary" in message ? message.binary : message.text);
    } catch (error) {
      this.drop(ws, WATCH_CLOSE.internal, `Send failed: ${error instanceof Error ? error.message : String(error)}`);
      return false;
    }
    flow.sent(message.bytes);
    return true;
  }
}

function isOpen(ws: WebSocket): boolean {
  return ws.readyState === WebSocket.READY_STATE_OPEN;
}

/** Closes once, never throws; reasons are cut to the protocol's 123 bytes. */
export function close(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, truncateUtf8(reason, 123));
  } catch {
    // Already closing or closed.
  }
}

function truncateUtf8(text: string, maxBytes: number): string {
  if (utf8Length(text) <= maxBytes) return text;
  let out = text;
  while (utf8Length(out) > maxBytes) out = out.slice(0, -1);
  return out;
}
