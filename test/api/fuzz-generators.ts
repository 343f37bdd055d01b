import { isRecord } from "../../schema/json.ts";
// Generators of test/api/fuzz.test.ts (QUALITY R3): a seeded PRNG, junk JSON values, and the
// mutations of a valid request (body, path segments, query values, credentials) the fuzz sends.
// Every generator is deterministic given the PRNG, so a run is reproduced by its seed.

/** mulberry32: small, fast and good enough to pick mutations reproducibly. */
export class Rng {
  private state: number;
  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    const item = items[this.int(items.length)];
    if (item === undefined) throw new Error("pick from an empty list");
    return item;
  }
}

type Key = string | number;
const clone = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

/** Every node of a JSON value with its path (the root included). */
export function nodes(value: unknown, path: Key[] = []): { path: Key[]; value: unknown }[] {
  const children = Array.isArray(value)
    ? value.flatMap((item, index) => nodes(item, [...path, index]))
    : isRecord(value)
      ? Object.entries(value).flatMap(([key, item]) => nodes(item, [...path, key]))
      : [];
  return [{ path, value }, ...children];
}

/** A copy of `root` with the node at `path` replaced (or removed when `replacement` is `REMOVE`). */
export const REMOVE = Symbol("remove");
export function setAt(root: unknown, path: readonly Key[], replacement: unknown): unknown {
  if (path.length === 0) return replacement === REMOVE ? undefined : replacement;
  const copy = clone(root);
  let parent: unknown = copy;
  for (const key of path.slice(0, -1)) parent = Array.isArray(parent) ? parent[Number(key)] : isRecord(parent) ? parent[String(key)] : undefined;
  const last = path[path.length - 1];
  if (Array.isArray(parent)) {
    if (replacement === REMOVE) parent.splice(Number(last), 1);
    else parent[Number(last)] = replacement;
  } else if (isRecord(parent)) {
    if (replacement === REMOVE) delete parent[String(last)];
    else parent[String(last)] = replacement;
  }
  return copy;
}

/** `depth` levels of arrays or objects around a string. */
export function nested(depth: number, shape: "array" | "object"): unknown {
  let value: unknown = "bottom";
  for (let i = 0; i < depth; i++) value = shape === "array" ? [value] : { a: value };
  return value;
}

const ALPHABET = ["a", "Z", "0", "_", "-", ":", "/", " ", "\"", "\\", "\u0000", "\u001f", "\u007f", "é", "ß", "\u202e", "🙂", "\ud800", "\ufffd", "{", "<"];
export function randomString(rng: Rng, length: number): string {
  let text = "";
  for (let i = 0; i < length; i++) text += rng.pick(ALPHABET);
  return text;
}

/** Values of every JSON type, wrong somewhere in every schema. */
export const WRONG_VALUES: readonly unknown[] = [
  null, true, false, 0, -1, 1.5, -0.5, 1e308, 2 ** 53 + 1, "", "x", "\u0000", "é🙂", [], [1, "a"], [{}], {}, { a: 1 }, { "": null },
];

/** A random JSON value: scalars, strings of odd characters, small containers, deep nesting. */
export function junk(rng: Rng, depth = 0): unknown {
  switch (rng.int(depth > 2 ? 5 : 8)) {
    case 0:
      return null;
    case 1:
      return rng.next() < 0.5;
    case 2:
      return rng.pick([0, -1, 2 ** 53 + 1, -0.5, 1e300, -1e300, rng.int(2_000_000) - 1_000_000]);
    case 3:
      return randomString(rng, rng.pick([0, 1, 8, 65, 257, 1001, 5000]));
    case 4:
      return rng.pick(WRONG_VALUES);
    case 5:
      return Array.from({ length: rng.int(4) }, () => junk(rng, depth + 1));
    case 6:
      return Object.fromEntries(Array.from({ length: rng.int(4) }, () => [randomString(rng, 1 + rng.int(6)), junk(rng, depth + 1)]));
    default:
      return nested(rng.pick([8, 70, 200]), rng.next() < 0.5 ? "array" : "object");
  }
}

/**
 * Structural mutations of a valid body: every node of another type, removed, with an unknown
 * member, an array in place of an object (and back), deeply nested junk and huge strings there;
 * then other whole bodies. The caller keeps the ones the document says must be refused.
 */
export function bodyMutations(example: unknown): { label: string; body: unknown }[] {
  const out: { label: string; body: unknown }[] = [];
  for (const { path, value } of nodes(example)) {
    const at = path.length === 0 ? "(body)" : path.join(".");
    for (const wrong of WRONG_VALUES) out.push({ label: `${at}=${JSON.stringify(wrong)}`, body: setAt(example, path, wrong) });
    if (path.length > 0) out.push({ label: `${at} removed`, body: setAt(example, path, REMOVE) });
    if (isRecord(value)) {
      out.push({ label: `${at} + unknown member`, body: setAt(example, path, { ...value, "x-unknown": 1 }) });
      out.push({ label: `${at} as array`, body: setAt(example, path, Object.values(value)) });
      out.push({ label: `${at} as array of itself`, body: setAt(example, path, [value]) });
    }
    if (Array.isArray(value)) out.push({ label: `${at} as object`, body: setAt(example, path, { ...value }) });
    out.push({ label: `${at} nested arrays`, body: setAt(example, path, nested(100, "array")) });
    out.push({ label: `${at} nested objects`, body: setAt(example, path, nested(100, "object")) });
    out.push({ label: `${at} huge string`, body: setAt(example, path, "x".repeat(typeof value === "string" ? 250_001 : 5_000)) });
  }
  return out;
}

/** Raw bodies that are not JSON at all, or not UTF-8. */
export const RAW_BODIES: readonly { label: string; bytes: Uint8Array | string }[] = [
  { label: "empty", bytes: "" },
  { label: "open brace", bytes: "{" },
  { label: "unquoted", bytes: "{nope}" },
  { label: "single quotes", bytes: "{'a':1}" },
  { label: "trailing comma", bytes: "[1,]" },
  { label: "NaN", bytes: "NaN" },
  { label: "undefined", bytes: "undefined" },
  { label: "trailing garbage", bytes: "{}x" },
  { label: "two documents", bytes: "{}{}" },
  { label: "form encoded", bytes: "a=1&b=2" },
  { label: "xml", bytes: "<a>1</a>" },
  { label: "NUL", bytes: "\u0000" },
  { label: "comment", bytes: "/* */ {}" },
  { label: "invalid utf-8 (ff fe)", bytes: new Uint8Array([0xff, 0xfe, 0xfd]) },
  { label: "invalid utf-8 in a brace", bytes: new Uint8Array([0x7b, 0xc3, 0x28, 0x7d]) },
  { label: "overlong utf-8", bytes: new Uint8Array([0x22, 0xc0, 0xaf]) },
  { label: "lone continuation bytes", bytes: new Uint8Array([0x5b, 0x80, 0x80, 0x5d]) },
  { label: "deep arrays (20000)", bytes: `${"[".repeat(20_000)}${"]".repeat(20_000)}` },
  { label: "deep arrays, unclosed", bytes: "[".repeat(50_000) },
];

/** Path segments (as written in the URL) that are not ids: separators, lengths, encodings. */
export const BAD_SEGMENTS: readonly string[] = [
  "", "a:b", "a%3Ab", "a/b", "a%2Fb", "a%5Cb", "x".repeat(65), "x".repeat(129), "x".repeat(300), "%C3%A9t%C3%A9", "%F0%9F%99%82",
  "%00", "a%00", "%20", "a%20b", "%25", "%", "%ZZ", "%FF", "a.b", "%3Cscript%3E", "%22", "a*", "~x", "%E2%80%AE", "pi", "pi.runtime",
];

/** Values of query parameters that the schemas refuse, by parameter name. */
export const BAD_QUERY: Readonly<Record<string, readonly string[]>> = {
  limit: ["0", "-1", "NaN", "1001", "99999", "1e3", "", "abc", " 5", "5.5", "0x10", "１０", "Infinity"],
  cursor: ["!!!", "garbage", btoa("seq:abc"), btoa("seq:-1"), "A".repeat(65), "%00", "seq:1", "", btoa("seq:1234567890123456")],
  wait: ["61", "-1", "NaN", "Infinity", "1e2", "100", "60.0001", "60.5", "abc", "", "0x10", " 1", "1.2345"],
  order: ["sideways", "", "ASC", "newest", "%00"],
  type: ["bogus", "", "MESSAGE", "x".repeat(300)],
  stopAtType: ["bogus", "", "MESSAGE"],
  customType: ["", "x".repeat(257)],
  fromSeq: ["-1", "abc", "1.5", "1e3", "", "1234567890123456"],
  start: ["a:b", "x".repeat(65), "", "%C3%A9"],
  id: ["a:b", "x".repeat(65), "", "%C3%A9", "a b"],
  stopAtId: ["a:b", "x".repeat(65), "", "%C3%A9"],
};

/** Whole query strings of `metadata.<key>=<value>` filters that session search and deletion refuse. */
export const BAD_METADATA_FILTERS: readonly string[] = [
  "metadata.=v", "metadata.a%20b=v", "metadata.a%3Ab=v", `metadata.${"k".repeat(65)}=v`, "metadata.k=v&metadata.k=w", `metadata.k=${"v".repeat(513)}`,
  Array.from({ length: 17 }, (_, i) => `metadata.k${i}=v`).join("&"),
];

/** JSON Lines bodies that are no export: not JSON, not objects, lines of unknown or wrong types, odd bytes. */
export const NDJSON_BODIES: readonly { label: string; bytes: Uint8Array | string }[] = [
  { label: "empty", bytes: "" },
  { label: "not JSON", bytes: "{nope\n" },
  { label: "array line", bytes: "[1,2]\n" },
  { label: "unknown line type", bytes: `${JSON.stringify({ type: "bogus" })}\n` },
  { label: "header of another format", bytes: `${JSON.stringify({ type: "session", format: "other", version: 99, id: "x" })}\n` },
  { label: "entry before a header", bytes: `${JSON.stringify({ type: "message", id: "e1", parentId: null, timestamp: 1 })}\n` },
  { label: "deep line", bytes: `${JSON.stringify(nested(200, "object"))}\n` },
  { label: "invalid utf-8", bytes: new Uint8Array([0x7b, 0xc3, 0x28, 0x7d, 0x0a]) },
  { label: "NUL line", bytes: "\u0000\n" },
];

/** Idempotency-Key values outside 1–255 printable ASCII characters. */
export const BAD_IDEMPOTENCY_KEYS: readonly string[] = ["", "a b", "k".repeat(256), "caf\u00e9", "tab\tkey"];

/** Methods besides the documented ones (OPTIONS and HEAD are left to CORS and GET; workerd refuses others). */
export const METHODS: readonly string[] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/** Authorization headers that name no valid credential; `key` is a valid tenant key. */
export function badAuthHeaders(rng: Rng, key: string, revoked: string, admin: string, forAdminRoute: boolean): { label: string; headers: Record<string, string> }[] {
  const tail = (n: number) => Array.from({ length: n }, () => rng.pick(["a", "B", "7", "_", "-"])).join("");
  const tenantOf = /^sk_(.+)_[A-Za-z0-9_-]{43}$/.exec(key)?.[1] ?? "t";
  const variants: [string, string | undefined][] = [
    ["missing", undefined],
    ["empty", ""],
    ["Bearer alone", "Bearer"],
    ["Bearer space", "Bearer "],
    ["Basic", "Basic dXNlcjpwYXNz"],
    ["no scheme", key],
    ["two tokens", `Bearer ${key} extra`],
    ["garbage", `Bearer ${tail(20)}`],
    ["right shape, wrong secret", `Bearer sk_${tenantOf}_${tail(43)}`],
    ["unknown tenant", `Bearer sk_nobody_${tail(8)}_${tail(43)}`],
    ["truncated", `Bearer ${key.slice(0, -1)}`],
    ["extended", `Bearer ${key}x`],
    ["percent bytes", "Bearer %ff%fe"],
    ["tab inside", `Bearer\t${key.slice(0, 10)}\t${key.slice(10)}`],
    ["revoked key", `Bearer ${revoked}`],
    ["browser token shape, garbage", `Bearer bt_${tail(40)}.${tail(43)}`],
    [forAdminRoute ? "tenant key on admin route" : "admin token on tenant route", `Bearer ${forAdminRoute ? key : admin}`],
  ];
  const out = variants.map(([label, value]): { label: string; headers: Record<string, string> } => ({ label, headers: value === undefined ? {} : { authorization: value } }));
  out.push({ label: "garbled subprotocol", headers: { "sec-websocket-protocol": `bearer.${tail(30)}` } });
  return out;
}
