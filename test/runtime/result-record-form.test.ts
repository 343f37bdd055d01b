import { describe, expect, it } from "vitest";
import { readResult, readResultOn, resultWrite } from "../../harness/runtime/operation-codec.ts";
import type { Value } from "../../harness/session/addresses.ts";
import { packUuid, unpackUuid } from "../../harness/session/ids.ts";
import type { StoredValue } from "../../harness/session/storage.ts";
import type { OperationResultRecord } from "../../schema/lane.ts";

// The stored form of an operation's record (QUALITY P3): defaults and the operation id left out,
// the end kept as a duration. Every record decodes to the same object, key order included (the API
// serializes it as read), and the earlier full form, with or without the id, still decodes.

const id = "01a234b6-a508-7490-a3c7-978b26f4dd51";
const base = { operationId: id, fromTipId: "01a234b6-a500-7490-a3c7-9786978e6027", tipId: "01a234b6-a509-7490-a3c7-97906b634dbb", startedAt: 1796180714760, endedAt: 1796180714761 };

const records: OperationResultRecord[] = [
  { operationId: id, kind: "run", status: "completed", fromTipId: base.fromTipId, tipId: base.tipId, startedAt: base.startedAt, endedAt: base.endedAt },
  { operationId: id, kind: "run", status: "completed", fromTipId: null, tipId: null, startedAt: 0, endedAt: 0 },
  { operationId: id, kind: "compaction", status: "declined", fromTipId: base.fromTipId, tipId: base.fromTipId, startedAt: base.startedAt, endedAt: base.endedAt + 5000 },
  { operationId: id, kind: "navigation", status: "aborted", fromTipId: null, tipId: base.tipId, startedAt: base.startedAt, endedAt: base.endedAt },
  { operationId: id, kind: "run", status: "failed", error: { code: "ProviderError", message: "boom", details: { status: 500 } }, fromTipId: base.fromTipId, tipId: base.tipId, startedAt: base.startedAt, endedAt: base.endedAt },
];

/** A reader holding exactly one stored value. */
function holding(stored: unknown) {
  return {
    getValue: <T>(address: Value<T>): StoredValue<T> | undefined =>
      address.namespace === "pi.result" && address.key === id ? { address, seq: 1, value: structuredClone(stored) as T } : undefined,
  };
}

function storedOf(record: OperationResultRecord): unknown {
  const write = resultWrite(record, "main");
  if (write.kind !== "value" || write.op !== "set") throw new Error("not a value write");
  return write.value;
}

describe("operation record stored form", () => {
  it("round-trips every kind, status, error and null tip, key order included", () => {
    for (const record of records) expect(JSON.stringify(readResult(holding(storedOf(record)), id))).toBe(JSON.stringify(record));
  });

  it("stores a completed run without its id, its defaults or its absolute end", () => {
    const [completed] = records;
    if (!completed) throw new Error("no record");
    const stored = JSON.stringify(storedOf(completed));
    expect(stored).not.toContain(id);
    expect(stored).not.toMatch(/run|completed|endedAt|1796180714761/);
    const { operationId: _id, ...full } = completed;
    expect(stored.length).toBeLessThan(JSON.stringify(full).length - 40);
  });

  it("decodes the earlier full forms, with and without the operation id, to the same record", () => {
    for (const record of records) {
      const { operationId: _id, ...withoutId } = record;
      expect(JSON.stringify(readResult(holding(withoutId), id))).toBe(JSON.stringify(record));
      expect(JSON.stringify(readResult(holding(record), id))).toBe(JSON.stringify(record));
    }
  });

  it("keeps UUID tips packed, any other tip as text, and reads the earlier compact form with text tips", () => {
    const [completed] = records;
    if (!completed) throw new Error("no record");
    const stored = JSON.stringify(storedOf(completed));
    expect(stored).not.toContain(base.tipId);
    expect(stored).toMatch(/^\{"F":"[A-Za-z0-9_-]{22}","T":"[A-Za-z0-9_-]{22}","a":/);
    const named = { ...completed, fromTipId: "tip-a", tipId: "TIP-B" };
    expect(storedOf(named)).toMatchObject({ f: "tip-a", t: "TIP-B" });
    expect(JSON.stringify(readResult(holding(storedOf(named)), id))).toBe(JSON.stringify(named));
    // The compact form an earlier build wrote: tips as text under the small keys.
    const earlier = { f: base.fromTipId, t: base.tipId, a: base.startedAt, d: 1 };
    expect(JSON.stringify(readResult(holding(earlier), id))).toBe(JSON.stringify(completed));
  });

  it("packs and unpacks any canonical UUID to the same text", () => {
    const samples = ["00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff", base.tipId, ...Array.from({ length: 200 }, () => crypto.randomUUID())];
    for (const uuid of samples) {
      const packed = packUuid(uuid);
      expect(packed).toHaveLength(22);
      expect(unpackUuid(packed ?? "")).toBe(uuid);
    }
    expect(packUuid(base.tipId.toUpperCase())).toBeUndefined();
    expect(() => unpackUuid("short")).toThrow(TypeError);
  });
  it("keeps the lane it ran on: another lane does not read it; a record from before lanes were kept is any lane's", () => {
    const [completed] = records;
    if (!completed) throw new Error("no record");
    const stored = storedOf(completed);
    expect(readResultOn(holding(stored), id, "main")).toEqual(readResult(holding(stored), id));
    expect(readResultOn(holding(stored), id, "other")).toBeUndefined();
    const { l: _lane, ...earlier } = stored as { l?: string };
    expect(readResultOn(holding(earlier), id, "other")).toEqual(readResult(holding(stored), id));
  });
});
