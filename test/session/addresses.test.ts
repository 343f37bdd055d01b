import { describe, expect, it } from "vitest";
import { InvalidAddress, isReservedNamespace, list, sameAddress, value } from "../../harness/session/addresses.ts";
import * as builtin from "../../harness/session/builtin-addresses.ts";
import { followerId, isUuidV7, uuidv7Ids, uuidv7Timestamp } from "../../harness/session/ids.ts";
import { appendList, deleteList, deleteValue, setValue } from "../../harness/session/writes.ts";

describe("typed addresses (reference §1.4)", () => {
  it("build frozen value and list addresses; an empty key is legal", () => {
    const v = value<number>("app.counter");
    const l = list<string>("app.log", "k");
    expect(v).toEqual({ kind: "value", namespace: "app.counter", key: "" });
    expect(l).toEqual({ kind: "list", namespace: "app.log", key: "k" });
    expect(Object.isFrozen(v)).toBe(true);
    expect(Object.isFrozen(l)).toBe(true);
  });

  it("refuse an empty namespace and NUL in either component", () => {
    expect(() => value("")).toThrow(InvalidAddress);
    expect(() => list("a\u0000b")).toThrow(InvalidAddress);
    expect(() => value("ns", "k\u0000")).toThrow(InvalidAddress);
  });

  it("identify locations by (kind, namespace, key)", () => {
    expect(sameAddress(value("a", "b"), value("a", "b"))).toBe(true);
    expect(sameAddress(value("a", "b"), list("a", "b"))).toBe(false);
    expect(sameAddress(value("a", "b"), value("a", "c"))).toBe(false);
  });

  it("reserve pi and pi.* only", () => {
    expect(isReservedNamespace("pi")).toBe(true);
    expect(isReservedNamespace("pi.lane.state")).toBe(true);
    expect(isReservedNamespace("pizza")).toBe(false);
    expect(isReservedNamespace("app.pi")).toBe(false);
  });

  it("type-check write helpers against the address kind", () => {
    const v = value<number>("n");
    const l = list<number>("n");
    expect(setValue(v, 1)).toEqual({ kind: "value", op: "set", namespace: "n", key: "", value: 1 });
    expect(deleteValue(v)).toEqual({ kind: "value", op: "delete", namespace: "n", key: "" });
    expect(appendList(l, 2)).toEqual({ kind: "list", op: "append", namespace: "n", key: "", value: 2 });
    expect(deleteList(l)).toEqual({ kind: "list", op: "delete", namespace: "n", key: "" });
  });
});

describe("the built-in address table", () => {
  it("places every runtime address in its documented namespace and key", () => {
    const rows = [
      [builtin.branchTip("main"), "value", "pi.branch.tip", "main"],
      [builtin.laneConfig("main"), "value", "pi.lane.config", "main"],
      [builtin.laneState("main"), "value", "pi.lane.state", "main"],
      [builtin.operationResult("op"), "value", "pi.result", "op"],
      [builtin.operationMeta("op"), "value", "pi.op.meta", "op"],
      [builtin.operationState("op"), "value", "pi.op.state", "op"],
      [builtin.operationToolArgs("op", "step", 3), "value", "pi.op.tool_args", "op:step:3"],
      [builtin.operationToolMemo("op", "inv", "memo"), "value", "pi.op.tool_memo", "op:inv:memo"],
      [builtin.operationPreparation("op", "task"), "value", "pi.op.preparation", "op:task"],
      [builtin.pendingEntry("e"), "value", "pi.pending.entry", "e"],
      [builtin.pendingToolOutput("op", "inv"), "value", "pi.pending.tool_output", "op:inv"],
      [builtin.pendingAssistantFrames("op", "resp"), "list", "pi.pending.assistant_frame", "op:resp"],
      [builtin.sessionName, "value", "pi.session.name", ""],
      [builtin.entryLabel("e"), "value", "pi.entry.label", "e"],
    ] as const;
    for (const [address, kind, namespace, key] of rows) {
      expect(address).toEqual({ kind, namespace, key });
      expect(isReservedNamespace(address.namespace)).toBe(true);
    }
  });

  it("offers exactly five scan-prefix constructors whose keys prefix their full addresses", () => {
    expect(builtin.branchTipInventoryPrefix().key).toBe("");
    const pairs = [
      [builtin.operationToolArgsPrefix("op"), builtin.operationToolArgs("op", "s", 1)],
      [builtin.operationToolArgsPrefix("op", "s"), builtin.operationToolArgs("op", "s", 1)],
      [builtin.operationToolMemoPrefix("op"), builtin.operationToolMemo("op", "i", "m")],
      [builtin.operationToolMemoPrefix("op", "i"), builtin.operationToolMemo("op", "i", "m")],
      [builtin.operationPreparationPrefix("op"), builtin.operationPreparation("op", "t")],
      [builtin.pendingToolOutputPrefix("op"), builtin.pendingToolOutput("op", "i")],
    ] as const;
    for (const [prefix, full] of pairs) {
      expect(prefix.namespace).toBe(full.namespace);
      expect(full.key.startsWith(prefix.key)).toBe(true);
    }
    // An operation's prefix never matches another operation whose id merely starts the same way.
    expect(builtin.operationToolArgs("op2", "s", 1).key.startsWith(builtin.operationToolArgsPrefix("op").key)).toBe(false);
  });
});

describe("UUIDv7 ids (reference §1.3)", () => {
  it("are UUIDv7, unique and time-sortable in minting order", () => {
    const ids = Array.from({ length: 1000 }, () => uuidv7Ids.next());
    expect(ids.every(isUuidV7)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it("carry the minting time in their 48-bit prefix", () => {
    const at = Date.UTC(2026, 10, 30, 12, 0, 0);
    expect(uuidv7Timestamp(uuidv7Ids.next(at))).toBe(at);
  });

  it("mint follower ids that share the leader's time prefix with a fresh tail", () => {
    const leader = uuidv7Ids.next(Date.UTC(2026, 0, 1));
    const followers = [followerId(uuidv7Ids, leader), followerId(uuidv7Ids, leader)];
    for (const follower of followers) {
      expect(follower.slice(0, 13)).toBe(leader.slice(0, 13));
      expect(follower).not.toBe(leader);
    }
    expect(followers[0]).not.toBe(followers[1]);
  });
});
