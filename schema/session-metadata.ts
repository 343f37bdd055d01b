import * as v from "valibot";
import { isKeyedObject } from "./json.ts";

// Session metadata (spec/API.md "Session metadata and search"): who and what a session belongs to,
// as a few short strings the tenant's index can find sessions by.

/** The bounds of one session's metadata; a creation or a merge beyond them writes nothing. */
export const SESSION_METADATA_LIMITS = { keys: 16, keyLength: 64, valueLength: 512 } as const;

/**
 * Keys are 1–64 characters of A–Z a–z 0–9 _ - . : the id alphabet plus `.`, so that every key is
 * usable as it is in a `metadata.<key>=` query parameter (no escaping, no `=` or `&`).
 */
export const MetadataKeySchema = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9_.-]{1,64}$/, "Metadata keys are 1–64 characters of A–Z a–z 0–9 _ - ."),
);
/** Values are any string of at most 512 characters (the empty string included). */
export const MetadataValueSchema = v.pipe(v.string(), v.maxLength(SESSION_METADATA_LIMITS.valueLength, `Metadata values are at most ${SESSION_METADATA_LIMITS.valueLength} characters`));

const atMostKeys = (limit: number) => (record: object): boolean => Object.keys(record).length <= limit;

export type SessionMetadata = Record<string, string>;
export type SessionMetadataPatch = Record<string, string | null>;

/**
 * The leading guard of the metadata schemas: a JSON object (valibot's record would take an array
 * too) without a key the record would silently drop. The OpenAPI document describes the whole by it.
 */
const isMetadataObject = isKeyedObject;

export const MetadataObjectSchema = v.custom<Record<string, string>>(
  isMetadataObject,
  "metadata must be an object of strings by key (keys are 1–64 characters of A–Z a–z 0–9 _ - ., not __proto__, constructor or prototype)",
);
export const MetadataPatchObjectSchema = v.custom<Record<string, string | null>>(
  isMetadataObject,
  "metadata must be an object of strings (or null to delete) by key (keys are 1–64 characters of A–Z a–z 0–9 _ - ., not __proto__, constructor or prototype)",
);

/** A session's metadata: at most 16 keys. */
export const SessionMetadataSchema = v.pipe(
  MetadataObjectSchema,
  v.record(MetadataKeySchema, MetadataValueSchema),
  v.check<SessionMetadata, string>(atMostKeys(SESSION_METADATA_LIMITS.keys), `A session holds at most ${SESSION_METADATA_LIMITS.keys} metadata keys`),
);

/**
 * `PATCH /v1/sessions/{sid}` `{ metadata }`: a JSON Merge Patch over the current map (`null`
 * deletes a key). A patch names at most 32 keys (it may delete 16 and set 16); the 16-key bound
 * of the merged map is checked by the session before it writes (422 LimitExceeded).
 */
export const SessionMetadataPatchSchema = v.pipe(
  MetadataPatchObjectSchema,
  v.record(MetadataKeySchema, v.nullable(MetadataValueSchema)),
  v.check<SessionMetadataPatch, string>(atMostKeys(2 * SESSION_METADATA_LIMITS.keys), `A metadata patch names at most ${2 * SESSION_METADATA_LIMITS.keys} keys`),
);

/** The map after `patch` (RFC 7396 over a flat map of strings): `null` deletes, a string sets. */
export function mergeMetadata(current: SessionMetadata, patch: SessionMetadataPatch): SessionMetadata {
  const next: SessionMetadata = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete next[key];
    else next[key] = value;
  }
  return next;
}
