import { isRecord } from "./json.ts";

/**
 * RFC 7396 JSON Merge Patch: an object patch merges member by member (recursively), `null`
 * removes a member, anything else (a string, a number, an array) replaces the target whole. A
 * patch that is not an object replaces the target. The result is validated by the caller.
 * (schema/settings-patch.ts merges session settings with its own rule for null, "back to the
 * default"; this is the plain RFC.)
 */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return patch;
  const merged: Record<string, unknown> = isRecord(target) ? { ...target } : {};
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete merged[name];
    // Defined, not assigned: a member named `__proto__` (parsed JSON may hold one) stays a member.
    else Object.defineProperty(merged, name, { value: applyMergePatch(Object.hasOwn(merged, name) ? merged[name] : undefined, value), enumerable: true, writable: true, configurable: true });
  }
  return merged;
}
