import { fail } from "./http-error.ts";

/** What one batch of lines sent to a session object carries at most (a single larger line goes alone). */
export const LINE_BATCH_BYTES = 2 * 1024 * 1024;

/**
 * The lines of a JSON Lines body, in batches bounded in bytes, read as they arrive: at most one
 * batch and one partial line are held, never the whole body. Empty lines are skipped (a trailing
 * newline, CRLF line ends). Crossing `maxBytes` for the body or `maxLineBytes` for one line is a
 * 413 PayloadTooLarge, with the rest of the upload left unread.
 */
export async function* lineBatches(body: ReadableStream<Uint8Array> | null, limits: { maxBytes: number; maxLineBytes: number }): AsyncGenerator<string[]> {
  if (!body) return;
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let bytes = 0;
  let partial = "";
  let batch: string[] = [];
  let batchBytes = 0;
  const tooLarge = (what: string, limit: number) => {
    reader.cancel().catch(() => undefined);
    return fail("PayloadTooLarge", `${what} exceeds ${limit} bytes`, { limit });
  };
  const add = (line: string): string[] | undefined => {
    const trimmed = line.endsWith("\r") ? line.slice(0, -1) : line;
    if (trimmed.trim() === "") return undefined;
    batch.push(trimmed);
    batchBytes += trimmed.length;
    if (batchBytes < LINE_BATCH_BYTES) return undefined;
    const full = batch;
    batch = [];
    batchBytes = 0;
    return full;
  };
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > limits.maxBytes) throw tooLarge("The body", limits.maxBytes);
    const text = decoder.decode(value, { stream: true });
    // Only the new text is searched: a long line is not scanned again with every chunk.
    let newline = text.indexOf("\n");
    let start = 0;
    while (newline >= 0) {
      const full = add(partial + text.slice(start, newline));
      partial = "";
      start = newline + 1;
      if (full) yield full;
      newline = text.indexOf("\n", start);
    }
    partial += text.slice(start);
    // UTF-16 units: a line of n units is at least n bytes, so this bound is never early.
    if (partial.length > limits.maxLineBytes) throw tooLarge("A line", limits.maxLineBytes);
  }
  const last = add(partial + decoder.decode());
  if (last) yield last;
  if (batch.length > 0) yield batch;
}
