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
