import { Validator, type Schema } from "@cfworker/json-schema";
import { isJsonObject, type JsonObject, type JsonValue } from "../../schema/json.ts";

// Tool arguments against the tool's JSON Schema (reference §4.8 "prepare"), with a maintained
// validator that needs no code generation, so it runs in workerd (@cfworker/json-schema).

const TYPE_NAMES = ["array", "boolean", "integer", "null", "number", "object", "string"];

/**
 * The keywords a parameters schema is checked for before it is stored: each one that is present
 * must have the type JSON Schema gives it, recursively. Anything else passes through unchecked.
 */
const META_SCHEMA: Schema = {
  $id: "urn:tool-parameters:meta",
  type: "object",
  properties: {
    type: { anyOf: [{ enum: TYPE_NAMES }, { type: "array", items: { enum: TYPE_NAMES } }] },
    properties: { type: "object", additionalProperties: { $ref: "#" } },
    patternProperties: { type: "object", additionalProperties: { $ref: "#" } },
    additionalProperties: { anyOf: [{ type: "boolean" }, { $ref: "#" }] },
    items: { anyOf: [{ type: "boolean" }, { $ref: "#" }] },
    prefixItems: { type: "array", items: { $ref: "#" } },
    required: { type: "array", items: { type: "string" } },
    enum: { type: "array" },
    anyOf: { type: "array", minItems: 1, items: { $ref: "#" } },
    oneOf: { type: "array", minItems: 1, items: { $ref: "#" } },
    allOf: { type: "array", minItems: 1, items: { $ref: "#" } },
    not: { $ref: "#" },
    $defs: { type: "object", additionalProperties: { $ref: "#" } },
    definitions: { type: "object", additionalProperties: { $ref: "#" } },
    minimum: { type: "number" },
    maximum: { type: "number" },
    minLength: { type: "integer", minimum: 0 },
    maxLength: { type: "integer", minimum: 0 },
    minItems: { type: "integer", minimum: 0 },
    maxItems: { type: "integer", minimum: 0 },
    pattern: { type: "string" },
    description: { type: "string" },
    $ref: { type: "string" },
  },
};

const metaValidator = new Validator(META_SCHEMA, "2020-12", true);

/** Why `candidate` is not a usable parameters schema, or undefined when it is. */
export function schemaProblem(candidate: JsonObject): string | undefined {
  const checked = metaValidator.validate(candidate);
  if (!checked.valid) return `parameters is not a valid JSON Schema (${describe(checked.errors)})`;
  if (!isSchema(candidate)) return "parameters is not a valid JSON Schema";
  try {
    // Compiling and running it once surfaces unresolvable references and bad patterns at the top;
    // the walk finds those under properties, items and combinators, which `{}` never reaches.
    new Validator(candidate, "2020-12", true).validate({});
    return nestedProblem(candidate, candidate, "");
  } catch (error) {
    return `parameters is not a usable JSON Schema: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** Subschemas by keyword: one schema, a list of them, or a map of them (every keyword that holds one, 2020-12 and draft-07). */
const ONE = ["additionalProperties", "items", "not", "propertyNames", "contains", "if", "then", "else", "additionalItems", "unevaluatedProperties", "unevaluatedItems"];
const LIST = ["prefixItems", "anyOf", "oneOf", "allOf"];
const MAP = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"];

/**
 * The first pattern that is not a regular expression (as the validator compiles it: Unicode mode)
 * or reference that resolves nowhere in the schema, anywhere in it; undefined when none. A
 * reference is a local pointer (`#`, `#/…`) or an anchor (`#name`, a `$anchor` of the schema): the
 * service loads no other document, so a call could never be checked against one.
 */
function nestedProblem(root: JsonValue, schema: JsonValue | undefined, at: string): string | undefined {
  if (!isJsonObject(schema)) return undefined;
  if (typeof schema.pattern === "string" && !compiles(schema.pattern)) return `the pattern at ${at || "/"} is not a regular expression`;
  const ref = schema.$ref;
  if (typeof ref === "string") {
    const local = ref === "#" || ref.startsWith("#/");
    const resolves = local ? pointed(root, ref.slice(1)) !== undefined : ref.startsWith("#") && anchorsOf(root).has(ref.slice(1));
    if (!resolves) return `the reference ${ref} at ${at || "/"} resolves to nothing in the schema (no other document is loaded)`;
  }
  for (const keyword of ONE) {
    const problem = nestedProblem(root, schema[keyword], `${at}/${keyword}`);
    if (problem) return problem;
  }
  for (const keyword of LIST) {
    const list = schema[keyword];
    if (!Array.isArray(list)) continue;
    for (const [index, item] of list.entries()) {
      const problem = nestedProblem(root, item, `${at}/${keyword}/${index}`);
      if (problem) return problem;
    }
  }
  for (const keyword of MAP) {
    const map = schema[keyword];
    if (!isJsonObject(map)) continue;
    for (const [name, item] of Object.entries(map)) {
      if (keyword === "patternProperties" && !compiles(name)) return `the pattern ${JSON.stringify(name)} at ${at}/patternProperties is not a regular expression`;
      const problem = nestedProblem(root, item, `${at}/${keyword}/${name}`);
      if (problem) return problem;
    }
  }
  return undefined;
}

/** Every `$anchor` named anywhere in `schema`. */
function anchorsOf(schema: JsonValue | undefined, found = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const item of schema) anchorsOf(item, found);
  else if (isJsonObject(schema)) {
    if (typeof schema.$anchor === "string") found.add(schema.$anchor);
    for (const item of Object.values(schema)) anchorsOf(item, found);
  }
  return found;
}

function compiles(pattern: string): boolean {
  try {
    new RegExp(pattern, "u");
    return true;
  } catch {
    return false;
  }
}

/** The value a JSON Pointer (RFC 6901, as a URI fragment) names in `root`, or undefined. */
function pointed(root: JsonValue, pointer: string): JsonValue | undefined {
  let value: JsonValue | undefined = root;
  if (pointer === "") return value;
  for (const raw of pointer.slice(1).split("/")) {
    let token: string;
    try {
      token = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~");
    } catch {
      return undefined;
    }
    if (Array.isArray(value)) value = value[Number(token)];
    else if (isJsonObject(value)) value = Object.hasOwn(value, token) ? value[token] : undefined;
    else return undefined;
    if (value === undefined) return undefined;
  }
  return value;
}

/** Why `args` do not satisfy `parameters` (the first few problems), or undefined when they do. */
export function argumentsProblem(parameters: JsonObject, args: JsonValue): string | undefined {
  if (!isSchema(parameters)) return "The tool's parameters are not a JSON Schema";
  let result;
  try {
    result = new Validator(parameters, "2020-12", false).validate(args);
  } catch (error) {
    return `The tool's parameters could not be checked: ${error instanceof Error ? error.message : String(error)}`;
  }
  return result.valid ? undefined : describe(result.errors);
}

function describe(errors: readonly { instanceLocation: string; error: string }[]): string {
  return errors
    .slice(0, 5)
    .map((unit) => `${unit.instanceLocation}: ${unit.error}`)
    .join("; ");
}

/** The checks above made it a schema; this guard tells TypeScript so without a cast. */
function isSchema(value: JsonObject): value is JsonObject & Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
