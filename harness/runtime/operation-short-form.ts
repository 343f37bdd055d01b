import { isRecord } from "../../schema/json.ts";
import { packUuid, unpackUuid } from "../session/ids.ts";

// The short stored form of an open operation's two values, `pi.op.meta` and `pi.op.state`
// (QUALITY P3, bytes written per turn). Every turn writes both and deletes them again at its
// settlement, so their field names, leaf name and ids were most of the bytes a simple turn wrote
// beyond its messages. Stored, the known field names are single characters, the leaf name a code,
// and ids in canonical UUID text are packed (22 base64url characters, ids.ts packUuid).
//
// Only the operation's own objects are shortened: the value itself, its `intent` and its
// `generation`. Everything below any other field (a lane configuration's tool schemas, a task's
// instructions, a batch) is kept exactly as given, whatever keys it holds. No long name is a single
// character, so reading maps the short names back and passes every other name through: rows an
// earlier build wrote in the long form read the same, and so does a field this table does not name.

/** Long field name → short stored name; every short name is distinct and one character. */
const SHORT_NAMES: Readonly<Record<string, string>> = {
  lane: "l",
  sourceTipId: "s",
  startedAt: "a",
  startedAfterId: "d",
  intent: "i",
  settings: "c",
  kind: "k",
  promptEntryIds: "p",
  at: "@",
  attempt: "n",
  nextAttempt: "x",
  responseEntryId: "r",
  usageId: "u",
  generation: "g",
  stepId: "S",
  triggerEntryId: "T",
  capture: "C",
  latestAssistantEntryId: "L",
};

const LONG_NAMES: ReadonlyMap<string, string> = new Map(Object.entries(SHORT_NAMES).map(([long, short]) => [short, long]));

/** Fields holding ids: shortened only when every id in them packs (else kept long, as text). */
const ID_FIELDS: ReadonlySet<string> = new Set(["sourceTipId", "promptEntryIds", "responseEntryId", "usageId", "stepId", "triggerEntryId", "latestAssistantEntryId"]);

/** Objects whose own fields are shortened too. */
const NESTED_FIELDS: ReadonlySet<string> = new Set(["intent", "generation"]);

/** The 13 leaves (reference §3.3) by code; a leaf name not here is stored long. */
const LEAF_CODES: Readonly<Record<string, string>> = {
  starting: "s",
  checkpoint: "c",
  "assistant.ready": "ar",
  "assistant.effect_pending": "ae",
  "assistant.retry_wait": "aw",
  tools: "t",
  "deferred.suspended": "ds",
  "deferred.effect_pending": "de",
  "summary.deciding": "sd",
  "summary.ready": "sr",
  "summary.effect_pending": "se",
  "summary.retry_wait": "sw",
  "navigation.ready_to_commit": "n",
};

const LEAF_NAMES: ReadonlyMap<string, string> = new Map(Object.entries(LEAF_CODES).map(([name, code]) => [code, name]));

type Fields = Record<string, unknown>;

/** An operation value as stored: its fields by their short names. */
export type ShortForm = Fields;

/** An id field's value packed, or undefined when any id in it is not canonical UUID text. */
function packedIds(value: unknown): unknown {
  if (value === null) return null;
  if (typeof value === "string") return packUuid(value);
  if (!Array.isArray(value)) return undefined;
  const packed = value.map((id) => (typeof id === "string" ? packUuid(id) : undefined));
  return packed.every((id) => id !== undefined) ? packed : undefined;
}

function unpackedIds(value: unknown): unknown {
  if (typeof value === "string") return unpackUuid(value);
  return Array.isArray(value) ? value.map((id) => (typeof id === "string" ? unpackUuid(id) : id)) : value;
}

/** The stored form of an operation value (meta or state). */
export function shortOperationForm(value: object): ShortForm {
  const stored: Fields = {};
  for (const [name, field] of Object.entries(value)) {
    const short = SHORT_NAMES[name];
    if (short === undefined) stored[name] = field;
    else if (ID_FIELDS.has(name)) {
      const packed = packedIds(field);
      if (packed === undefined) stored[name] = field;
      else stored[short] = packed;
    } else if (name === "at") {
      const code = typeof field === "string" ? LEAF_CODES[field] : undefined;
      if (code === undefined) stored[name] = field;
      else stored[short] = code;
    } else stored[short] = NESTED_FIELDS.has(name) && isRecord(field) ? shortOperationForm(field) : field;
  }
  return stored;
}

/** An operation value as the engine reads it, from the short form or the earlier long one. */
export function longOperationForm<T extends object>(stored: T): T;
export function longOperationForm(stored: Fields): Fields {
  const value: Fields = {};
  for (const [name, field] of Object.entries(stored)) {
    const long = LONG_NAMES.get(name);
    if (long === undefined) value[name] = field;
    else if (ID_FIELDS.has(long)) value[long] = unpackedIds(field);
    else if (long === "at") value[long] = typeof field === "string" ? (LEAF_NAMES.get(field) ?? field) : field;
    else value[long] = NESTED_FIELDS.has(long) && isRecord(field) ? longOperationForm(field) : field;
  }
  return value;
}
