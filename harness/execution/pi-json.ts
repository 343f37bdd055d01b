import type { JsonValue as PiJsonValue } from "@earendil-works/pi-ai";
import type { JsonObject, JsonValue } from "../../schema/json.ts";

/** A deep, mutable copy of a pi-ai JSON object (whose arrays are readonly) as a schema JSON object. */
export function toJsonObject(value: { readonly [key: string]: PiJsonValue }): JsonObject {
  const out: JsonObject = {};
  for (const [key, item] of Object.entries(value)) out[key] = toJsonValue(item);
  return out;
}
function toJsonValue(value: PiJsonValue): JsonValue {
  if (value === null || typeof value !== "object") return value;
  if (isArray(value)) return value.map(toJsonValue);
  return toJsonObject(value);
}
function isArray(value: PiJsonValue): value is readonly PiJsonValue[] {
  return Array.isArray(value);
}
