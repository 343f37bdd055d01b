import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import type { HarnessEvent, LaneSnapshot } from "../../schema/lane.ts";
import type { WatchMessage } from "../../schema/watch.ts";
import { sseReader, type SseItem, type SseReader } from "../helpers/sse-reader.ts";

/** `GET …/events` through the real app; the response's body is read incrementally. */
export async function openEvents(path: string, headers: Record<string, string> = {}): Promise<{ response: Response; stream: SseReader }> {
  const response = await exports.default.fetch(`http://api.test${path}`, { headers: { accept: "text/event-stream", ...headers } });
  expect(response.status, response.status === 200 ? "" : await response.clone().text()).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  if (!response.body) throw new Error("no body");
  return { response, stream: sseReader(response.body) };
}

/** The socket message an SSE event carries. */
export const messageOf = (item: SseItem): WatchMessage<LaneSnapshot> => JSON.parse(item.data);

export function snapshotOf(item: SseItem | undefined): { seq: number; snapshot: LaneSnapshot } {
  if (item?.event !== "snapshot") throw new Error(`Expected a snapshot event, got ${JSON.stringify(item).slice(0, 300)}`);
  const message = messageOf(item);
  if (message.type !== "snapshot") throw new Error("snapshot event without a snapshot message");
  return message;
}

export function eventsOf(items: SseItem[]): { id: string; seq: number; event: HarnessEvent }[] {
  return items.flatMap((item) => {
    if (item.event !== "event") return [];
    const message = messageOf(item);
    return message.type === "event" ? [{ id: item.id ?? "", seq: message.seq, event: message.event }] : [];
  });
}

export const isRunEndEvent = (runId: string) => (item: SseItem): boolean => {
  if (item.event !== "event") return false;
  const message = messageOf(item);
  return message.type === "event" && message.event.type === "run_end" && message.event.runId === runId;
};
