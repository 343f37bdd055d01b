import type * as v from "valibot";

// valibot's issues in the API's words (ARCHITECTURE D16: a 400 says what is wrong and where).
// valibot phrases issues for programmers ("Invalid key: Expected never but received \"x\"",
// "Invalid type: Expected Object but received Object" for an either-or body that matched neither
// shape); here each becomes `<where>: <what>` with the field, query or path parameter named and
// the problem said plainly. Messages the schemas of schema/ set themselves are kept as written.

type Issue = v.BaseIssue<unknown>;
type PathItem = NonNullable<Issue["path"]>[number];

/** valibot's default message form; a schema's own message never has it. */
const DEFAULT_MESSAGE = /^Invalid [\w ]+: (Expected [\s\S]* but r|R)eceived [\s\S]*$/;

/** `<where>: <what>` for one issue; `root` names the validated input itself (`body`, or a path parameter's name). */
export function describeIssue(issue: Issue, root: string): string {
  const { issue: found, path } = mostSpecific(issue, issue.path ?? []);
  return `${dotPath(path) ?? root}: ${phrase(found)}`;
}

/**
 * An either-or shape (a union) that matched no option reports one issue holding every option's
 * issues, with paths relative to it. The one that got furthest into the input names the likely
 * mistake: `{ message: { role: "user" } }` against `{ message } | { customType, data? }` is a
 * missing `message.content`, not "neither shape".
 */
function mostSpecific(issue: Issue, path: readonly PathItem[]): { issue: Issue; path: readonly PathItem[] } {
  if (!issue.issues || issue.issues.length === 0) return { issue, path };
  let best: { issue: Issue; path: readonly PathItem[] } | undefined;
  for (const sub of issue.issues) {
    const candidate = mostSpecific(sub, [...path, ...(sub.path ?? [])]);
    if (!best || candidate.path.length > best.path.length) best = candidate;
  }
  return best ?? { issue, path };
}

function dotPath(path: readonly PathItem[]): string | undefined {
  const keys = path.map((item) => ("key" in item ? String(item.key) : "")).filter((key) => key !== "");
  return keys.length > 0 ? keys.join(".") : undefined;
}

function phrase(issue: Issue): string {
  if (!DEFAULT_MESSAGE.test(issue.message)) return issue.message;
  if (issue.kind === "schema") {
    if (issue.expected === "never") return "unknown field";
    if (issue.received === "undefined") return "required";
    if (issue.type === "variant" || issue.type === "picklist" || issue.type === "literal" || issue.type === "enum") return `must be ${choices(issue.expected)}`;
    return `expected ${nouns(issue.expected)}, got ${noun(issue.received)}`;
  }
  const requirement = typeof issue.requirement === "number" ? issue.requirement : undefined;
  const unit = typeof issue.input === "string" ? "characters" : "items";
  switch (issue.type) {
    case "min_length":
      return `must have at least ${requirement} ${unit}`;
    case "max_length":
      return `must have at most ${requirement} ${unit}`;
    case "length":
      return `must have exactly ${requirement} ${unit}`;
    case "min_value":
      return `must be at least ${String(issue.requirement)}`;
    case "max_value":
      return `must be at most ${String(issue.requirement)}`;
    case "integer":
    case "safe_integer":
      return "must be an integer";
    case "finite":
      return "must be a finite number";
    case "regex":
      return "has an invalid format";
    default:
      return `invalid (${issue.type})`;
  }
}

/** `("a" | "b")` → `one of "a", "b"`; `"a"` → `"a"`. */
function choices(expected: string | null): string {
  const options = (expected ?? "").replace(/^\((.*)\)$/s, "$1").split(" | ");
  return options.length > 1 ? `one of ${options.join(", ")}` : (options[0] ?? "valid");
}

/** `(string | Object)` → `a string or an object`. */
function nouns(expected: string | null): string {
  return (expected ?? "a valid value")
    .replace(/^\((.*)\)$/s, "$1")
    .split(" | ")
    .map(noun)
    .join(" or ");
}

const NOUNS: Record<string, string> = {
  string: "a string",
  number: "a number",
  boolean: "a boolean",
  bigint: "an integer",
  Object: "an object",
  Array: "an array",
  Date: "a date",
  null: "null",
  undefined: "nothing",
};

function noun(type: string): string {
  return NOUNS[type] ?? type;
}
