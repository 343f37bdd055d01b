import { sessionMetadata } from "../../harness/session/builtin-addresses.ts";
import type { SessionReader } from "../../harness/session/mutation.ts";
import type { Write } from "../../harness/session/storage.ts";
import { deleteValue, setValue } from "../../harness/session/writes.ts";
import { mergeMetadata, SESSION_METADATA_LIMITS, type SessionMetadata, type SessionMetadataPatch } from "../../schema/session-metadata.ts";
import { RpcError } from "../rpc/rpc-errors.ts";

/**
 * A JSON Merge Patch of the session's metadata as read on the session's line: the merged map and
 * the write that stores it (none when it changes nothing). Beyond 16 keys it is 422 LimitExceeded,
 * thrown on the line, so whatever the same commit would also have written is not written either
 * (a PATCH of settings or a move with metadata is one commit: session-settings.ts, session-agent.ts).
 */
export function metadataPatchWrite(m: Pick<SessionReader, "getValue">, patch: SessionMetadataPatch): { metadata: SessionMetadata; writes: Write[] } {
  const stored = m.getValue(sessionMetadata)?.value ?? {};
  const metadata = mergedWithinBound(stored, patch);
  if (JSON.stringify(metadata) === JSON.stringify(stored)) return { metadata, writes: [] };
  return { metadata, writes: [Object.keys(metadata).length === 0 ? deleteValue(sessionMetadata) : setValue(sessionMetadata, metadata)] };
}

function mergedWithinBound(stored: SessionMetadata, patch: SessionMetadataPatch): SessionMetadata {
  const next = mergeMetadata(stored, patch);
  const limit = SESSION_METADATA_LIMITS.keys;
  if (Object.keys(next).length > limit) {
    throw new RpcError({ code: "LimitExceeded", message: `A session holds at most ${limit} metadata keys`, details: { resource: "metadata", limit } });
  }
  return next;
}
