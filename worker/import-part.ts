import { IMPORT_LINE_MAX_BYTES } from "../schema/data-export.ts";
import type { CreatedSession } from "../schema/session.ts";
import { sessionStub } from "./env.ts";
import { fail, replyValue } from "./http-error.ts";
import { lineBatches } from "./ndjson-batches.ts";

type SessionStub = ReturnType<typeof sessionStub>;

/** The import id names the session object it stages in (`imp_<sessionId>.<random>`), so no index is needed to find it. */
export function newImportId(sessionId: string): string {
  return `imp_${sessionId}.${crypto.randomUUID().replace(/-/g, "")}`;
}

export function sessionIdOfImport(importId: string): string {
  return importId.slice("imp_".length, importId.lastIndexOf("."));
}

/**
 * Streams one part of an import into the staging object, batch by batch as the body arrives;
 * a part that fails (a refused line, a body too large, a broken upload) is undone in the object
 * before the failure is answered, so that the part can be sent again. `repeated`: the part was
 * written whole before, and its body is not read.
 */
export async function importPart(
  stub: SessionStub,
  importId: string,
  part: number,
  upload: { body: ReadableStream<Uint8Array> | null; declaredLength: string | undefined },
  maxBytes: number,
): Promise<{ part: number; lines: number; repeated: boolean }> {
  const { body, declaredLength } = upload;
  // A declared length beyond the bound is refused before anything is read or begun.
  if (Number(declaredLength ?? "0") > maxBytes) throw fail("PayloadTooLarge", `The body exceeds ${maxBytes} bytes`, { limit: maxBytes });
  const opened = replyValue(await stub.importPartBegin(importId, part));
  if (opened.repeated) {
    await body?.cancel().catch(() => undefined);
    return { part, lines: 0, repeated: true };
  }
  try {
    for await (const batch of lineBatches(body, { maxBytes, maxLineBytes: IMPORT_LINE_MAX_BYTES })) replyValue(await stub.importLines(importId, opened.attempt, batch));
    const ended = replyValue(await stub.importPartEnd(importId, opened.attempt));
    return { ...ended, repeated: false };
  } catch (error) {
    await stub.importPartAbort(importId, opened.attempt).catch(() => undefined);
    throw error;
  }
}

/** Commits, or discards the staged import when `discardOnFailure` (a one-request import leaves nothing behind). */
export async function commitImport(stub: SessionStub, importId: string, discardOnFailure: boolean): Promise<CreatedSession> {
  try {
    return replyValue(await stub.importCommit(importId));
  } catch (error) {
    if (discardOnFailure) await stub.importDiscard(importId).catch(() => undefined);
    throw error;
  }
}
