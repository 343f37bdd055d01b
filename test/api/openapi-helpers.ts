import type { JsonSchema } from "@valibot/to-json-schema";
import type { Hono } from "hono";
import type { AppEnv } from "../../worker/env.ts";

// Helpers of test/api/openapi.test.ts: the routes a Hono app serves, and a small JSON Schema
// checker for the keywords the generated document uses (it throws on any other keyword, so it
// can never pass a schema it does not understand).

/** `METHOD /path` of every handler route the app serves, `:param` as `{param}`. */
export function servedRoutes(app: Hono<AppEnv>): Set<string> {
  const served = new Set<string>();
  for (const route of app.routes) {
    // Middleware (`app.use`) is registered as ALL on a wildcard path; it serves no route itself.
    if (route.method === "ALL" && route.path.endsWith("*")) continue;
    const path = route.path.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?/g, "{$1}").replace(/(.)\/$/, "$1");
    served.add(`${route.method} ${path}`);
  }
  return served;
}

type Definition = JsonSchema | boolean;
// `format` is an annotation in JSON Schema 2020-12 unless a validator opts in (an http tool's `url` in an export carries one).
const ANNOTATIONS = new Set(["description", "default", "title", "examples", "format"]);
const KEYWORDS = new Set([
  "$ref", "type", "enum", "const", "pattern", "minLength", "maxLength", "minimum", "maximum", "items", "minItems", "maxItems",
  "properties", "required", "additionalProperties", "propertyNames", "anyOf", "oneOf", "allOf",
]);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case "null":
      return value === null;
    case "array":
      return Array.isArray(value);
    case "object":
      return isObject(value);
    case "integer":
      return Number.isInteger(value);
    default:
      return typeof value === type;
  }
}

/** Whether `value` is valid against `schema`, `$ref`s resolved in `components`. */
export function conforms(schema: Definition, value: unknown, components: Record<string, JsonSchema>): boolean {
  if (typeof schema === "boolean") return schema;
  // `x-` extensions (ApiError's `x-status-by-code`) say nothing about validity.
  for (const key of Object.keys(schema)) if (!KEYWORDS.has(key) && !ANNOTATIONS.has(key) && !key.startsWith("x-")) throw new Error(`unsupported keyword ${key}`);
  const check = (sub: Definition, item: unknown) => conforms(sub, item, components);
  if (schema.$ref !== undefined) {
    const target = components[schema.$ref.replace("#/components/schemas/", "")];
    if (!target) throw new Error(`unresolved ${schema.$ref}`);
    if (!check(target, value)) return false;
  }
  if (schema.type !== undefined && ![schema.type].flat().some((type) => hasType(value, type))) return false;
  if (schema.enum && !schema.enum.some((option) => option === value)) return false;
  if (schema.const !== undefined && schema.const !== value) return false;
  if (schema.anyOf && !schema.anyOf.some((sub) => check(sub, value))) return false;
  if (schema.oneOf && schema.oneOf.filter((sub) => check(sub, value)).length !== 1) return false;
  if (schema.allOf && !schema.allOf.every((sub) => check(sub, value))) return false;
  if (typeof value === "string") {
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) return false;
    if (value.length < (schema.minLength ?? 0) || value.length > (schema.maxLength ?? Infinity)) return false;
  }
  if (typeof value === "number" && (value < (schema.minimum ?? -Infinity) || value > (schema.maximum ?? Infinity))) return false;
  if (Array.isArray(value)) {
    if (value.length < (schema.minItems ?? 0) || value.length > (schema.maxItems ?? Infinity)) return false;
    const { items } = schema;
    if (Array.isArray(items)) throw new Error("tuple items are not used by the document");
    if (items !== undefined && !value.every((item) => check(items, item))) return false;
  }
  if (isObject(value)) {
    if (schema.required?.some((key) => !(key in value))) return false;
    for (const [key, item] of Object.entries(value)) {
      const declared = schema.properties?.[key];
      if (declared !== undefined ? !check(declared, item) : schema.additionalProperties !== undefined && !check(schema.additionalProperties, item)) return false;
      if (schema.propertyNames !== undefined && !check(schema.propertyNames, key)) return false;
    }
  }
  return true;
}

/**
 * Variations of a valid body: an unlisted property, each property removed or of another type, other
 * bodies. No arrays in place of objects: valibot's object schemas take an array for an object
 * (`typeof [] === "object"`: `[]` passes `v.strictObject` with no required keys), which the
 * document's `type: "object"` does not; the document states the intended contract.
 */
export function mutations(example: unknown): unknown[] {
  const variants: unknown[] = [null, "text", 12345];
  if (!isObject(example)) return variants;
  variants.push({ ...example, "x-unlisted": true });
  for (const key of Object.keys(example)) {
    const rest = { ...example };
    delete rest[key];
    variants.push(rest);
    for (const other of [12345, "", null, {}]) variants.push({ ...example, [key]: other });
  }
  return variants;
}
