import * as v from "valibot";

// valibot's object and record schemas accept arrays (an array is an object in JavaScript; its
// indexes pass as a record's keys), so `[]` would pass for `{}`. The API contract says "object" (and the OpenAPI document too): this walk rejects an
// array wherever a schema expects an object, at any depth, before the request is accepted.

type Node = {
  type?: string;
  entries?: Record<string, Node>;
  wrapped?: Node;
  item?: Node;
  value?: Node;
  options?: Node[];
  rest?: Node;
};

const OBJECT_TYPES = new Set(["object", "strict_object", "loose_object", "object_with_rest"]);
const WRAPPERS = new Set(["optional", "nullable", "nullish", "exact_optional", "undefinedable", "non_optional", "non_nullable", "non_nullish"]);

/** The dotted path of the first array found where an object is expected ("" for the input itself), or undefined. */
export function arrayWhereObjectExpected(schema: v.GenericSchema, input: unknown): string | undefined {
  return walk(schema, input, "");
}

function walk(node: Node, input: unknown, path: string): string | undefined {
  const type = node.type ?? "";
  if (WRAPPERS.has(type)) return input === undefined || input === null || !node.wrapped ? undefined : walk(node.wrapped, input, path);
  if (OBJECT_TYPES.has(type)) {
    if (Array.isArray(input)) return path;
    if (typeof input !== "object" || input === null) return undefined;
    const record: Record<string, unknown> = { ...input };
    for (const [key, child] of Object.entries(node.entries ?? {})) {
      const found = key in record ? walk(child, record[key], join(path, key)) : undefined;
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (type === "array" && node.item && Array.isArray(input)) {
    for (const [index, element] of input.entries()) {
      const found = walk(node.item, element, join(path, String(index)));
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (type === "record" && Array.isArray(input)) return path;
  if (type === "record" && node.value && typeof input === "object" && input !== null && !Array.isArray(input)) {
    for (const [key, element] of Object.entries(input)) {
      const found = walk(node.value, element, join(path, key));
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if ((type === "union" || type === "variant") && node.options) {
    // Valid if some option both accepts the input and has no array-as-object inside it.
    const verdicts = node.options.map((option) => walk(option, input, path));
    return verdicts.some((verdict) => verdict === undefined) ? undefined : verdicts[0];
  }
  return undefined;
}

const join = (path: string, key: string): string => (path ? `${path}.${key}` : key);
