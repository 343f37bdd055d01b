import type { ExecutableTool } from "../../harness/execution/tools.ts";
import { ADDRESS_PART_MAX } from "../../schema/api-sessions.ts";
import type { JsonObject, JsonValue } from "../../schema/json.ts";
import { utf8Length } from "../../schema/utf8.ts";

/** The session's application values as the value tools see them (never the runtime's `pi.*` ones). */
export interface ApplicationValues {
  get(namespace: string, key: string): JsonValue | undefined;
  set(namespace: string, key: string, value: JsonValue): Promise<void>;
  /** Keys starting with `prefix`, in key order, at most `limit`. */
  list(namespace: string, prefix: string, limit: number): { key: string; value: JsonValue }[];
}

export const MAX_LISTED_VALUES = 100;
/**
 * A listing's values stop here (JSON text): a value may be as large as a PUT takes (1 MiB), and a
 * hundred of them would be a result larger than an entry may be. The first value is always listed.
 */
export const MAX_LISTED_BYTES = 1024 * 1024;

/** The addresses `…/values/{namespace}/{key}` takes (schema/api-sessions.ts: no NUL, not `.` or `..`), so what a tool writes the API reads and an export carries. */
const PATH_SEGMENT = "^(?!\\.\\.?$)[^\\u0000]*$";
const address = {
  namespace: { type: "string", minLength: 1, maxLength: ADDRESS_PART_MAX, pattern: PATH_SEGMENT, description: "An application namespace (not pi or pi.*)" },
  key: { type: "string", minLength: 1, maxLength: ADDRESS_PART_MAX, pattern: PATH_SEGMENT, description: "Not empty, . or .." },
};

function text(value: JsonValue): { type: "text"; text: string } {
  return { type: "text", text: JSON.stringify(value) };
}

function names(args: JsonObject): { namespace: string; key: string } {
  const namespace = String(args.namespace);
  const key = typeof args.key === "string" ? args.key : "";
  return { namespace: withinAddress("namespace", namespace), key: withinAddress("key", key) };
}

/**
 * The routes count an address's length in UTF-16 units (JavaScript's `length`), the arguments'
 * JSON Schema in code points: an address of emoji may pass the schema and still be one the routes
 * cannot read. Refused here as the routes would refuse it (the call's result is the error).
 */
function withinAddress(part: "namespace" | "key", text: string): string {
  if (text.length > ADDRESS_PART_MAX) throw new Error(`The ${part} is at most ${ADDRESS_PART_MAX} UTF-16 code units, as …/values/{namespace}/{key} takes it`);
  return text;
}

/** `values_get`: one application value of this session. */
export function valuesGetTool(description: string | undefined, values: ApplicationValues): ExecutableTool {
  return {
    kind: "executable",
    declaration: {
      name: "values_get",
      kind: "builtin",
      description: description ?? "Reads one application value of this session by namespace and key; null when it is not set.",
      parameters: { type: "object", properties: address, required: ["namespace", "key"], additionalProperties: false },
      replay: "safe",
    },
    execute: async (args) => {
      const { namespace, key } = names(args);
      const found = values.get(namespace, key) ?? null;
      return { content: [text(found)], details: { namespace, key, value: found } };
    },
  };
}

/** `values_set`: writes one application value of this session. */
export function valuesSetTool(description: string | undefined, values: ApplicationValues): ExecutableTool {
  return {
    kind: "executable",
    declaration: {
      name: "values_set",
      kind: "builtin",
      description: description ?? "Writes one application value of this session (any JSON value) by namespace and key.",
      parameters: { type: "object", properties: { ...address, value: {} }, required: ["namespace", "key", "value"], additionalProperties: false },
      // Writing the same value twice leaves the same state.
      replay: "safe",
    },
    execute: async (args) => {
      const { namespace, key } = names(args);
      const next = args.value ?? null;
      await values.set(namespace, key, next);
      return { content: [{ type: "text", text: `Set ${namespace}/${key}` }], details: { namespace, key } };
    },
  };
}

/** `values_list`: the application values of one namespace, optionally under a key prefix. */
export function valuesListTool(description: string | undefined, values: ApplicationValues): ExecutableTool {
  return {
    kind: "executable",
    declaration: {
      name: "values_list",
      kind: "builtin",
      description: description ?? `Lists up to ${MAX_LISTED_VALUES} application values of one namespace of this session, by key prefix.`,
      parameters: {
        type: "object",
        properties: { namespace: address.namespace, prefix: address.key, limit: { type: "integer", minimum: 1, maximum: MAX_LISTED_VALUES } },
        required: ["namespace"],
        additionalProperties: false,
      },
      replay: "safe",
    },
    execute: async (args) => {
      const namespace = withinAddress("namespace", String(args.namespace));
      const prefix = typeof args.prefix === "string" ? args.prefix : "";
      const limit = typeof args.limit === "number" ? args.limit : MAX_LISTED_VALUES;
      const listed: { key: string; value: JsonValue }[] = [];
      let bytes = 0;
      const found = values.list(namespace, prefix, limit);
      for (const item of found) {
        const size = utf8Length(JSON.stringify(item));
        if (listed.length > 0 && bytes + size > MAX_LISTED_BYTES) break;
        bytes += size;
        listed.push({ key: item.key, value: item.value });
      }
      const left = found.length - listed.length;
      const content = [text(listed)];
      if (left > 0) {
        const next = found[listed.length]?.key ?? "";
        content.push({ type: "text", text: `${left} more value(s) from key ${JSON.stringify(next)} on were left out: together they are larger than one answer may be. Read them with values_get, or list a narrower prefix.` });
      }
      return { content, details: { namespace, count: listed.length, ...(left > 0 && { truncated: true }) } };
    },
  };
}
