import { Validator, type Schema } from "@cfworker/json-schema";
import type { JsonObject, JsonValue } from "../../schema/json.ts";

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
    // Compiling and running it once surfaces unresolvable references and bad patterns now.
    new Validator(candidate, "2020-12", true).validate({});
  } catch (error) {
    return `parameters is not a usable JSON Schema: ${error instanceof Error ? error.message : String(error)}`;
  }
  return undefined;
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
