// Reads a Server-Sent Events body incrementally (the WHATWG event-stream format): usable in
// workerd tests and in Node e2e tests alike. Every wait is bounded, so a missing event fails the
// test instead of hanging it.

export interface SseItem {
  /** `event:` (the name; "message" when absent), or "comment" for a `:` line. */
  event: string;
  id?: string;
  data: string;
}

const WAIT_MS = 8_000;

export interface SseReader {
  next(): Promise<SseItem | undefined>;
  /** Reads until `match` holds, skipping comments unless `comments`; every item read, the match last. */
  until(match: (item: SseItem) => boolean, comments?: boolean): Promise<SseItem[]>;
  /** Whether the body ended (reads everything left, bounded). */
  ended(): Promise<SseItem[]>;
  cancel(): Promise<void>;
}

export function sseReader(body: ReadableStream<Uint8Array>): SseReader {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const items: SseItem[] = [];
  let done = false;

  const parseBlocks = () => {
    buffer = parseSseBlocks(buffer, items);
  };

  const next = async (): Promise<SseItem | undefined> => {
    for (;;) {
      const item = items.shift();
      if (item) return item;
      if (done) return undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`No event-stream data within ${WAIT_MS} ms`)), WAIT_MS);
      });
      const read = await Promise.race([reader.read(), timeout]).finally(() => clearTimeout(timer));
      if (read.done) done = true;
      else buffer += decoder.decode(read.value, { stream: true });
      parseBlocks();
    }
  };

  return {
    next,
    async until(match, comments = false) {
      const read: SseItem[] = [];
      for (;;) {
        const item = await next();
        if (!item) throw new Error(`The stream ended first; read ${JSON.stringify(read).slice(0, 500)}`);
        if (item.event === "comment" && !comments) continue;
        read.push(item);
        if (match(item)) return read;
      }
    },
    async ended() {
      const rest: SseItem[] = [];
      for (let item = await next(); item; item = await next()) rest.push(item);
      return rest;
    },
    async cancel() {
      await reader.cancel().catch(() => undefined);
    },
  };
}

/** Moves every complete block of `buffer` into `items` (comments as "comment" items); returns the incomplete rest. */
export function parseSseBlocks(buffer: string, items: SseItem[]): string {
  let rest = buffer;
  for (let end = rest.indexOf("\n\n"); end >= 0; end = rest.indexOf("\n\n")) {
    const block = rest.slice(0, end);
    rest = rest.slice(end + 2);
    const item: SseItem = { event: "message", data: "" };
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) {
        items.push({ event: "comment", data: line.slice(1).trim() });
        continue;
      }
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") item.event = value;
      else if (field === "id") item.id = value;
      else if (field === "data") data.push(value);
    }
    if (data.length > 0 || item.id !== undefined) items.push({ ...item, data: data.join("\n") });
  }
  return rest;
}
