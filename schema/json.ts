import * as v from "valibot";

/** Any JSON value. Payloads in the session store are plain JSON: no undefined, NaN or cycles. */
/** Arrays are readonly so values produced by pi-ai (which types its JSON that way) fit without copies. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

const isJson = (input: unknown, depth = 0): boolean => {
  if (depth > 64) return false;
  if (input === null || typeof input === "string" || typeof input === "boolean") return true;
  if (typeof input === "number") return Number.isFinite(input);
  if (Array.isArray(input)) return input.every((item) => isJson(item, depth + 1));
  if (typeof input === "object") {
    const proto = Object.getPrototypeOf(input);
    if (proto !== Object.prototype && proto !== null) return false;
    return Object.values(input).every((item) => isJson(item, depth + 1));
  }
  return false;
};

export const JsonValueSchema = v.custom<JsonValue>(
  (input) => isJson(input),
  "Expected a JSON value (finite numbers, at most 64 levels deep)",
);

export const JsonObjectSchema = v.custom<JsonObject>(
  (input) => typeof input === "object" && input !== null && !Array.isArray(input) && isJson(input),
  "Expected a JSON object",
);

/** Narrows a JSON value to an object (Array.isArray does not exclude readonly arrays). */
export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Names valibot's record skips without a word (its prototype-pollution guard): a client's map refuses them instead of losing them. */
export const RECORD_SKIPPED_KEYS: readonly string[] = ["__proto__", "constructor", "prototype"];

/**
 * The leading guard of a map a client sends, before valibot's record reads it: a JSON object (the
 * record would take an array too, its indexes being valid names) with no key the record would skip.
 */
export function isKeyedObject(input: unknown): boolean {
  return isRecord(input) && !RECORD_SKIPPED_KEYS.some((key) => Object.hasOwn(input, key));
}

/** Narrows any value to a plain record: an object that is not an array (parsed JSON, stored values). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Whether a list names each item once: a list used as a set (active tools) refuses repeats rather than keeping them. */
export function namesEachOnce(items: readonly string[]): boolean {
  return new Set(items).size === items.length;
}
