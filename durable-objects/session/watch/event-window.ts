import type { HarnessEvent } from "../../../schema/lane.ts";
import { inLaneStream } from "../../../schema/watch.ts";

/** Each lane keeps at least its newest this many events for resumption (spec/API.md "Streaming over HTTP")… */
export const EVENT_WINDOW_EVENTS = 1_000;
/** …unless they hold more than this much JSON together: memory is bounded whatever the events weigh. */
export const EVENT_WINDOW_CHARS = 2 * 1024 * 1024;
/** Lanes whose windows are kept; the least recently written one is forgotten beyond it. */
export const EVENT_WINDOW_LANES = 32;
/**
 * …and all of a session's windows together hold at most this much (the oldest events go first,
 * whichever lane they belong to): the lane budget times the lane count would be a large share of
 * an isolate's 128 MB.
 */
export const EVENT_WINDOW_TOTAL_CHARS = 8 * 1024 * 1024;

interface Retained {
  seq: number;
  event: HarnessEvent;
  chars: number;
}

interface LaneWindow {
  /** Every event of the lane's stream with a larger seq than this is retained (oldest first). */
  floor: number;
  events: Retained[];
  chars: number;
}

/**
 * The events a resumed lane stream may still be given (SSE `Last-Event-ID`, docs/api-watch.md
 * "Streaming over HTTP (SSE)"), in memory: what the hub numbered in this instance, per lane.
 *
 * Correctness over reach: a lane's window answers "the events after seq N" only when it holds
 * every event its stream carried after N (N at or above its floor). A window starts when the
 * lane's first event is numbered (its floor just below it), so it never claims events numbered
 * before it existed; evicting an event raises the floor past it. The `epoch` names one run of the
 * counter: it changes when the instance restarts or follows another harness, so an id from before
 * (whose state the new harness may not share, or whose seq a wiped session may reuse) is never
 * taken for one of now.
 */
export class EventWindow {
  private lanes = new Map<string, LaneWindow>();
  /** What every window holds together (an event in several lanes' streams counts in each). */
  private chars = 0;
  private seq = 0;
  epoch = newEpoch();

  /** A new run of the counter from `seq`: nothing before it is known. */
  restart(seq: number): void {
    this.lanes = new Map();
    this.chars = 0;
    this.seq = seq;
    this.epoch = newEpoch();
  }

  /** Every numbered event, in seq order (lane streams only: the session stream is never resumed). */
  retain(seq: number, event: HarnessEvent): void {
    this.seq = seq;
    const own = "lane" in event && typeof event.lane === "string" ? event.lane : undefined;
    if (own !== undefined && !this.lanes.has(own) && inLaneStream(event, own)) {
      this.lanes.set(own, { floor: seq - 1, events: [], chars: 0 });
      this.forgetOldestLanes();
    }
    let measured: number | undefined;
    for (const [lane, window] of this.lanes) {
      if (!inLaneStream(event, lane)) continue;
      measured ??= JSON.stringify(event).length;
      window.events.push({ seq, event, chars: measured });
      window.chars += measured;
      this.chars += measured;
      while (window.events.length > EVENT_WINDOW_EVENTS || window.chars > EVENT_WINDOW_CHARS) this.dropOldest(window);
    }
    while (this.chars > EVENT_WINDOW_TOTAL_CHARS) {
      const oldest = this.windowWithOldestEvent();
      if (!oldest) break;
      this.dropOldest(oldest);
    }
    // After the loop: re-inserting while iterating would visit the lane again, forever.
    if (own !== undefined) this.touch(own);
  }

  /**
   * The lane's events after `epoch.after`, oldest first, or undefined when the window cannot
   * vouch for them all (another epoch, a seq before its floor or one never numbered).
   */
  after(lane: string, epoch: string, after: number): { seq: number; event: HarnessEvent }[] | undefined {
    if (epoch !== this.epoch || after > this.seq) return undefined;
    const window = this.lanes.get(lane);
    // No window: the lane's stream carried nothing in this run but shared events; only "now" is known.
    if (!window) return after === this.seq ? [] : undefined;
    if (after < window.floor) return undefined;
    return window.events.filter(({ seq }) => seq > after).map(({ seq, event }) => ({ seq, event }));
  }

  /** The lane's event numbered `epoch.seq`, while the window holds it. */
  eventAt(lane: string, epoch: string, seq: number): HarnessEvent | undefined {
    if (epoch !== this.epoch) return undefined;
    return this.lanes.get(lane)?.events.find((candidate) => candidate.seq === seq)?.event;
  }

  /** Map order is the lanes' recency: the first lane is the one written longest ago. */
  private touch(lane: string): void {
    const window = this.lanes.get(lane);
    if (!window) return;
    this.lanes.delete(lane);
    this.lanes.set(lane, window);
  }

  private forgetOldestLanes(): void {
    while (this.lanes.size > EVENT_WINDOW_LANES) {
      const oldest = this.lanes.keys().next();
      if (oldest.done) return;
      this.chars -= this.lanes.get(oldest.value)?.chars ?? 0;
      this.lanes.delete(oldest.value);
    }
  }

  /** Evicting an event raises its window's floor past it: the window no longer vouches for it. */
  private dropOldest(window: LaneWindow): void {
    const dropped = window.events.shift();
    if (!dropped) return;
    window.floor = dropped.seq;
    window.chars -= dropped.chars;
    this.chars -= dropped.chars;
  }

  private windowWithOldestEvent(): LaneWindow | undefined {
    let oldest: LaneWindow | undefined;
    for (const window of this.lanes.values()) {
      const first = window.events[0];
      if (first && (!oldest || first.seq < (oldest.events[0]?.seq ?? Number.POSITIVE_INFINITY))) oldest = window;
    }
    return oldest;
  }
}

function newEpoch(): string {
  return crypto.randomUUID().replace(/-/g, "").slice(0, 12);
}
