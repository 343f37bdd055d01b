import * as v from "valibot";

// Resumable lane streams (docs/api-watch.md "Streaming over HTTP (SSE)"): the id every SSE event
// carries and the internal frame that tells the front worker which run of the counter it reads.

/**
 * An SSE event id: `<epoch>.<seq>`. `seq` is the watch protocol's seq; `epoch` names the run of the
 * session object's counter that numbered it (it changes when the object restarts), so an id is
 * only ever resumed by the run that issued it. Epochs are 12 lowercase hex characters.
 */
export interface StreamId {
  epoch: string;
  seq: number;
}

const STREAM_ID = /^([0-9a-f]{12})\.(0|[1-9][0-9]{0,15})$/;

export const formatStreamId = ({ epoch, seq }: StreamId): string => `${epoch}.${seq}`;

/** The id, or undefined for anything else (a foreign or garbled id only costs a fresh snapshot). */
export function parseStreamId(text: string | undefined): StreamId | undefined {
  const match = text === undefined ? null : STREAM_ID.exec(text.trim());
  const epoch = match?.[1];
  const seq = Number(match?.[2]);
  if (epoch === undefined || !Number.isSafeInteger(seq)) return undefined;
  return { epoch, seq };
}

/**
 * The first frame on a relay socket (one the front worker opened with `x-watch-resume`), before the
 * snapshot or the resumed events: the epoch its seqs belong to. Never sent to other sockets.
 */
export type WatchEpochMessage = { type: "epoch"; epoch: string };

/** The heartbeat comment's spacing when the client names none (spec: every 15 s). */
export const SSE_HEARTBEAT_DEFAULT_SECONDS = 15;
export const SSE_HEARTBEAT_MAX_SECONDS = 60;

/**
 * `GET …/lanes/{lane}/events`: `after` resumes after an id (as `Last-Event-ID` does; the header
 * wins), `heartbeat` sets the comment heartbeat's spacing in seconds (1–60, default 15), for
 * proxies that close quieter connections sooner.
 */
export const LaneEventsQuerySchema = v.object({
  after: v.optional(v.pipe(v.string(), v.maxLength(64, "after is an event id (at most 64 characters)"))),
  heartbeat: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^[1-9][0-9]?$/, "heartbeat is a whole number of seconds"),
      v.transform(Number),
      v.maxValue(SSE_HEARTBEAT_MAX_SECONDS, `heartbeat is at most ${SSE_HEARTBEAT_MAX_SECONDS} seconds`),
    ),
  ),
});
