import { uuidv7 } from "@earendil-works/pi-ai/utils/uuid";

/** Mints every id of a session: entries, usage rows, operations, reserved ids (reference §1.3). */
export interface IdGenerator {
  /** A fresh UUIDv7; with `timestampMs`, a follower id sharing that 48-bit time prefix. */
  next(timestampMs?: number): string;
}

export const uuidv7Ids: IdGenerator = { next: (timestampMs) => uuidv7(timestampMs) };

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export function isUuidV7(id: string): boolean {
  return UUID_V7.test(id);
}

/** The millisecond time prefix of a UUIDv7, used to mint follower ids (tool results share it). */
export function uuidv7Timestamp(id: string): number {
  if (!isUuidV7(id)) throw new TypeError(`Not a UUIDv7: ${id}`);
  return Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/** A follower of `leaderId`: same time prefix, fresh random tail. */
export function followerId(ids: IdGenerator, leaderId: string): string {
  return ids.next(uuidv7Timestamp(leaderId));
}

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether `id` is a UUID in canonical text: lowercase hex, hyphens in place (any version). */
export function isCanonicalUuid(id: string): boolean {
  return CANONICAL_UUID.test(id);
}

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const PACKED_LENGTH = 22;

/**
 * A UUID in canonical text (36 characters) as the 22 base64url characters of its 128 bits, for
 * stored forms that keep ids inside JSON (QUALITY P3); undefined for any other id, which is kept
 * as it is. `unpackUuid` gives back the same text.
 */
export function packUuid(id: string): string | undefined {
  if (!isCanonicalUuid(id)) return undefined;
  // 128 bits in 22 six-bit digits: the last digit carries 4 bits of padding.
  let bits = BigInt(`0x${id.replaceAll("-", "")}`) << 4n;
  let packed = "";
  for (let digit = 0; digit < PACKED_LENGTH; digit++) {
    packed = BASE64URL.charAt(Number(bits & 63n)) + packed;
    bits >>= 6n;
  }
  return packed;
}

export function unpackUuid(packed: string): string {
  if (packed.length !== PACKED_LENGTH) throw new TypeError(`Not a packed UUID: ${packed}`);
  let bits = 0n;
  for (const character of packed) {
    const digit = BASE64URL.indexOf(character);
    if (digit < 0) throw new TypeError(`Not a packed UUID: ${packed}`);
    bits = (bits << 6n) | BigInt(digit);
  }
  const hex = (bits >> 4n).toString(16).padStart(32, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Whether `key` is the packed form of a UUID (`packUuid`'s 22 characters, the padding bits clear). */
export function isPackedUuid(key: string): boolean {
  if (key.length !== PACKED_LENGTH) return false;
  for (const character of key) if (BASE64URL.indexOf(character) < 0) return false;
  return (BASE64URL.indexOf(key.charAt(PACKED_LENGTH - 1)) & 15) === 0;
}
