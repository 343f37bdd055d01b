import { value, type Value } from "../session/addresses.ts";
import type { SessionReader } from "../session/mutation.ts";
import type { Write } from "../session/storage.ts";
import { setValue } from "../session/writes.ts";

/**
 * Content-addressed captures (QUALITY P3): what an operation captures and keeps — its RunSettings
 * at acceptance, a generation's lane configuration and request options — is stored once per
 * distinct content at `pi.capture/{key}` and referenced by key, instead of being rewritten into
 * every operation. Captures are immutable and never deleted: they are few (one per distinct
 * settings or configuration a session ever ran with) and small. The key is a hash of the
 * canonical JSON; a stored capture with other content under the same key (a collision) is never
 * overwritten: the next candidate key is used.
 */
export class CaptureStore {
  /** Keys known to hold their content in this session (captures are immutable). */
  private readonly known = new Map<string, string>();

  /** The key of `content` and the write that stores it when it is not stored yet (on the line). */
  capture<T>(m: Pick<SessionReader, "getValue">, content: T): { key: string; writes: Write[] } {
    const json = canonicalJson(content);
    const base = hash(json);
    for (let attempt = 0; ; attempt++) {
      const key = attempt === 0 ? base : `${base}.${attempt}`;
      const known = this.known.get(key);
      if (known === json) return { key, writes: [] };
      if (known !== undefined) continue;
      const stored = m.getValue(captureAddress(key));
      // Known only once read back: a write whose commit failed must not count as stored.
      if (!stored) return { key, writes: [setValue(captureAddress<T>(key), content)] };
      const storedJson = canonicalJson(stored.value);
      this.known.set(key, storedJson);
      if (storedJson === json) return { key, writes: [] };
    }
  }
}

/**
 * The content stored under `key`, typed as what was captured there (like every typed address),
 * or undefined: a missing capture is corruption to the caller.
 */
export function resolveCapture<T>(m: Pick<SessionReader, "getValue">, key: string): T | undefined {
  return m.getValue(captureAddress<T>(key))?.value;
}

const CAPTURE_NAMESPACE = "pi.capture";
const captureAddress = <T = unknown>(key: string): Value<T> => value<T>(CAPTURE_NAMESPACE, key);

/** JSON with object keys sorted at every level, so equal content has one text (and one key). */
export function canonicalJson(content: unknown): string {
  return JSON.stringify(content, (_key, item: unknown) => {
    if (typeof item !== "object" || item === null || Array.isArray(item)) return item;
    return Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}

/** cyrb53 (a public-domain 53-bit string hash), in base 36: 11 characters at most. */
function hash(text: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}
