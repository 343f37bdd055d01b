import * as v from "valibot";
import {
  DEFAULT_SETTINGS,
  HarnessSettingsSchema,
  MAX_STREAM_HEADERS,
  StreamHeadersPatchObjectSchema,
  StreamOptionsSchema,
  type HarnessSettings,
  type StreamOptions,
} from "./settings.ts";

// A settings change is a JSON Merge Patch (RFC 7396) of the session's settings: a member left out
// keeps its value, an object merges member by member (`{"compaction":{"keepRecentTokens":20}}`
// changes that one number), and `null` removes a member, which for settings means "back to the
// default" (the default of `streamOptions.temperature` is to send none; of `compaction.enabled`,
// true). Values that are one thing, not a bag of members (a model identity, the deferred mode), are
// replaced whole. Every member is typed here, so a patch that passed this schema always merges into
// valid settings, but for one thing: maps merged by name over several patches can outgrow their
// bound, so the merged settings are checked against HarnessSettingsSchema before they are written.

/** A member of a merge patch: absent (unchanged), null (back to the default) or a new value. */
const member = <S extends v.GenericSchema>(schema: S) => v.optional(v.nullable(schema));

const retry = HarnessSettingsSchema.entries.retry.entries;
const compaction = HarnessSettingsSchema.entries.compaction.entries;
const stream = StreamOptionsSchema.entries;
/** A header or metadata map merges by name too; null removes one name. */
const headerPatch = v.pipe(
  StreamHeadersPatchObjectSchema,
  v.record(v.pipe(v.string(), v.maxLength(256)), v.nullable(v.pipe(v.string(), v.maxLength(4096)))),
  v.check((record) => Object.keys(record).length <= MAX_STREAM_HEADERS, `at most ${MAX_STREAM_HEADERS} entries`),
);

export const HarnessSettingsPatchSchema = v.strictObject({
  systemPrompt: member(HarnessSettingsSchema.entries.systemPrompt.wrapped),
  retry: member(v.strictObject({ enabled: member(retry.enabled), maxRetries: member(retry.maxRetries), baseDelayMs: member(retry.baseDelayMs) })),
  compaction: member(
    v.strictObject({ enabled: member(compaction.enabled), reserveTokens: member(compaction.reserveTokens), keepRecentTokens: member(compaction.keepRecentTokens) }),
  ),
  steeringMode: member(HarnessSettingsSchema.entries.steeringMode),
  followUpMode: member(HarnessSettingsSchema.entries.followUpMode),
  toolExecution: member(HarnessSettingsSchema.entries.toolExecution),
  streamOptions: member(
    v.strictObject({
      transport: member(stream.transport.wrapped),
      timeoutMs: member(stream.timeoutMs.wrapped),
      maxRetries: member(stream.maxRetries.wrapped),
      maxRetryDelayMs: member(stream.maxRetryDelayMs.wrapped),
      headers: member(headerPatch),
      metadata: member(headerPatch),
      cacheRetention: member(stream.cacheRetention.wrapped),
      maxTokens: member(stream.maxTokens.wrapped),
      temperature: member(stream.temperature.wrapped),
      deferred: member(stream.deferred.wrapped),
    }),
  ),
  defaultModel: member(HarnessSettingsSchema.entries.defaultModel.wrapped),
});
export type HarnessSettingsPatch = v.InferOutput<typeof HarnessSettingsPatchSchema>;

type MemberPatch<T> = { [K in keyof T]?: T[K] | null };

/** Merges `patch` into `current` member by member; null takes `defaults`' member (absent there: removed). */
function mergeMembers<T extends object>(current: T, patch: MemberPatch<T>, defaults: T): T {
  const next: T = { ...current };
  for (const key of Object.keys(patch) as (keyof T)[]) {
    const value = patch[key];
    if (value === undefined) continue;
    if (value !== null) next[key] = value;
    else if (defaults[key] !== undefined) next[key] = defaults[key];
    else delete next[key];
  }
  return next;
}

/** A string map merged by name: null removes that name; an empty result is no map. */
function mergeMap(current: Record<string, string> | undefined, patch: Record<string, string | null> | null | undefined): Record<string, string> | undefined {
  if (patch === undefined) return current;
  if (patch === null) return undefined;
  const next: Record<string, string> = { ...current };
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete next[name];
    else next[name] = value;
  }
  return Object.keys(next).length === 0 ? undefined : next;
}

function mergeStreamOptions(current: StreamOptions, patch: NonNullable<HarnessSettingsPatch["streamOptions"]>): StreamOptions {
  const { headers, metadata, ...scalars } = patch;
  const next = mergeMembers<StreamOptions>(current, scalars, {});
  const mergedHeaders = mergeMap(current.headers, headers);
  const mergedMetadata = mergeMap(current.metadata, metadata);
  delete next.headers;
  delete next.metadata;
  return { ...next, ...(mergedHeaders && { headers: mergedHeaders }), ...(mergedMetadata && { metadata: mergedMetadata }) };
}

/** The settings after `patch` (RFC 7396 over `current`; null members fall back to `defaults`). */
export function applySettingsPatch(current: HarnessSettings, patch: HarnessSettingsPatch, defaults: HarnessSettings = DEFAULT_SETTINGS): HarnessSettings {
  const { retry: retryPatch, compaction: compactionPatch, streamOptions: streamPatch, ...scalars } = patch;
  const next = mergeMembers<HarnessSettings>(current, scalars, defaults);
  if (retryPatch !== undefined) next.retry = retryPatch === null ? defaults.retry : mergeMembers(current.retry, retryPatch, defaults.retry);
  if (compactionPatch !== undefined) next.compaction = compactionPatch === null ? defaults.compaction : mergeMembers(current.compaction, compactionPatch, defaults.compaction);
  if (streamPatch !== undefined) next.streamOptions = streamPatch === null ? defaults.streamOptions : mergeStreamOptions(current.streamOptions, streamPatch);
  return next;
}
