import { describe, expect, it } from "vitest";
import { assistantMessage, userMessage } from "./helpers/messages.ts";
import { toWire } from "../schema/wire.ts";
import { createSession, failure, failureCode, sessionStub, uniqueSessionName, unwrap } from "./helpers/sessions.ts";

// The SessionObject RPC surface: expected failures come back as tagged values, never as throws.

describe("SessionObject", () => {
  it("creates a session once, persisting tenant and session ids in its own storage", async () => {
    const ids = uniqueSessionName("create");
    const stub = sessionStub(ids.name);
    const created = unwrap(await stub.create({ tenantId: ids.tenantId, sessionId: ids.sessionId, name: "first" }));
    expect(created).toMatchObject({ id: ids.sessionId, tenantId: ids.tenantId, name: "first", branches: [] });
    expect(created.stats.messageCount).toBe(0);
    const again = failure(await stub.create({ tenantId: ids.tenantId, sessionId: ids.sessionId }));
    expect(again).toEqual({ code: "SessionExists", message: expect.any(String) });
    expect(unwrap(await stub.info()).name).toBe("first");
  });

  it("answers SessionNotFound for an object that holds no session", async () => {
    const stub = sessionStub(uniqueSessionName("missing").name);
    expect(failure(await stub.info()).code).toBe("SessionNotFound");
  });

  it("creates and lists branches, and tags their failures", async () => {
    const { stub } = await createSession("branches");
    expect(unwrap(await stub.createBranch("main", null))).toEqual({ name: "main", tipId: null });
    const entryId = unwrap(await stub.appendToBranch("main", toWire({ message: userMessage("hi") }))).entryId;
    expect(unwrap(await stub.createBranch("side", entryId))).toEqual({ name: "side", tipId: entryId });
    expect(unwrap(await stub.branches()).items).toEqual([
      { name: "main", tipId: entryId, lane: false },
      { name: "side", tipId: entryId, lane: false },
    ]);
    const failures = await Promise.all([
      stub.createBranch("main", null),
      stub.createBranch("", null),
      stub.createBranch("x", "0190a000-0000-7000-8000-000000000000"),
      stub.appendToBranch("nope", toWire({ message: userMessage("x") })),
      stub.appendToBranch("main", toWire({ message: assistantMessage("p", "pending") })),
      stub.scanBranch("nope"),
      stub.getEntry("0190a000-0000-7000-8000-000000000000"),
      stub.setLabel("0190a000-0000-7000-8000-000000000000", "x"),
    ]);
    expect(failures.map(failureCode)).toEqual([
      "BranchExists",
      "InvalidBranch",
      "UnknownTarget",
      "UnknownBranch",
      "InvalidMessage",
      "UnknownBranch",
      "UnknownEntry",
      "UnknownTarget",
    ]);
    expect(unwrap(await stub.scanBranch("main")).map((e) => e.id)).toEqual([entryId]);
  });

  it("stores application values and lists, and refuses the runtime's pi namespaces", async () => {
    const { stub } = await createSession("values");
    expect(unwrap(await stub.getValue("app", "k"))).toBeNull();
    const set = unwrap(await stub.setValue("app", "k", toWire({ a: 1 })));
    expect(unwrap(await stub.getValue("app", "k"))).toEqual({ value: { a: 1 }, seq: set.seq });
    const appended = unwrap(await stub.appendList("app", "log", toWire(1)));
    expect(unwrap(await stub.readList("app", "log"))).toEqual([{ seq: appended.seq, value: 1 }]);
    unwrap(await stub.deleteList("app", "log"));
    unwrap(await stub.deleteValue("app", "k"));
    expect(unwrap(await stub.readList("app", "log"))).toEqual([]);
    expect(unwrap(await stub.getValue("app", "k"))).toBeNull();
    const refused = await Promise.all([
      stub.setValue("pi", "x", toWire(1)),
      stub.setValue("pi.lane.state", "main", toWire(1)),
      stub.getValue("pi.branch.tip", "main"),
      stub.appendList("pi.pending.assistant_frame", "x", toWire(1)),
      stub.setValue("", "x", toWire(1)),
      stub.setValue("a\u0000", "x", toWire(1)),
    ]);
    expect(refused.map(failureCode)).toEqual([
      "ReservedNamespace",
      "ReservedNamespace",
      "ReservedNamespace",
      "ReservedNamespace",
      "InvalidAddress",
      "InvalidAddress",
    ]);
    expect(unwrap(await stub.branches()).items).toEqual([]);
    expect(failureCode(await stub.setValue("app", "k", "{not json" as never))).toBe("ValidationFailed");
  });

  it("reports stats and usage for the session", async () => {
    const { stub } = await createSession("stats");
    unwrap(await stub.createBranch("main", null));
    unwrap(await stub.appendToBranch("main", toWire({ message: userMessage("a") })));
    unwrap(await stub.appendToBranch("main", toWire({ customType: "note" })));
    expect(unwrap(await stub.stats()).messageCount).toBe(1);
    expect(unwrap(await stub.scanUsage())).toEqual([]);
    expect(unwrap(await stub.findEntries({ type: "custom" }))).toHaveLength(1);
  });
});
