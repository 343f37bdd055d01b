import { abortAllDurableObjects, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { list, value } from "../../harness/session/addresses.ts";
import { insertUsage } from "../../harness/session/writes.ts";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { assistantMessage, userMessage } from "../helpers/messages.ts";
import { toWire } from "../../schema/wire.ts";
import { createSession, sessionStub, unwrap } from "../helpers/sessions.ts";

// Everything committed survives the object being killed: memory is lost, storage is kept.

async function seed(stub: ReturnType<typeof sessionStub>) {
  unwrap(await stub.createBranch("main", null));
  const first = unwrap(await stub.appendToBranch("main", toWire({ message: userMessage("hello") }))).entryId;
  const second = unwrap(await stub.appendToBranch("main", toWire({ message: assistantMessage("hi") }))).entryId;
  unwrap(await stub.createBranch("side", first));
  unwrap(await stub.appendToBranch("side", toWire({ customType: "note", data: { n: 1 } })));
  unwrap(await stub.setValue("app", "k", toWire({ nested: [1, null, "x"] })));
  unwrap(await stub.setValue("app", "nothing", toWire(null)));
  unwrap(await stub.appendList("app", "log", toWire("a")));
  unwrap(await stub.appendList("app", "log", toWire("b")));
  unwrap(await stub.setName("durable"));
  unwrap(await stub.setLabel(first, "start"));
  await runInDurableObject(stub, (instance: SessionObject) =>
    instance.session().mutate((m) =>
      m.commit([
        insertUsage({
          id: instance.session().idGenerator.next(),
          usage: { ...assistantMessage("").usage, input: 10, output: 5, totalTokens: 15 },
          entryId: second,
          adjustment: false,
        }),
      ]),
    ),
  );
  return { first, second };
}

async function snapshot(stub: ReturnType<typeof sessionStub>) {
  return {
    info: unwrap(await stub.info()),
    main: unwrap(await stub.scanBranch("main", { order: "oldestFirst" })),
    side: unwrap(await stub.scanBranch("side", { order: "oldestFirst" })),
    value: unwrap(await stub.getValue("app", "k")),
    nullValue: unwrap(await stub.getValue("app", "nothing")),
    missing: unwrap(await stub.getValue("app", "missing")),
    list: unwrap(await stub.readList("app", "log")),
    usage: unwrap(await stub.scanUsage()),
  };
}

describe("durability across object death", () => {
  it("keeps every entry, branch, value, list, name, label and usage row after abortAllDurableObjects()", async () => {
    const { name, stub } = await createSession("abort");
    const { first } = await seed(stub);
    const before = await snapshot(stub);
    await abortAllDurableObjects();
    const fresh = sessionStub(name);
    const after = await snapshot(fresh);
    expect(after).toEqual(before);
    expect(after.info.name).toBe("durable");
    expect(after.info.stats.messageCount).toBe(2);
    expect(after.info.stats.usage.totalTokens).toBe(15);
    expect(after.nullValue?.value).toBeNull();
    expect(after.missing).toBeNull();
    expect(after.list.map((item) => item.value)).toEqual(["a", "b"]);
    const label = await runInDurableObject(fresh, (instance: SessionObject) => instance.session().getLabel(first));
    expect(label).toBe("start");
  });

  it("keeps everything after eviction, and the next write continues the seq", async () => {
    const { stub } = await createSession("evict");
    await seed(stub);
    const before = await snapshot(stub);
    await evictDurableObject(stub);
    const after = await snapshot(stub);
    expect(after).toEqual(before);
    const next = unwrap(await stub.appendList("app", "log", toWire("c"))).seq;
    const highest = Math.max(...after.main.map((e) => e.seq), ...after.list.map((i) => i.seq), ...after.usage.map((u) => u.seq));
    expect(next).toBeGreaterThan(highest);
  });

  it("restores a session with runtime-owned values intact across abort", async () => {
    const { name, stub } = await createSession("pi");
    await runInDurableObject(stub, async (instance: SessionObject) => {
      const session = instance.session();
      await session.setValue(value<{ current: null }>("pi.lane.state", "main"), { current: null });
      await session.appendList(list<number>("pi.pending.assistant_frame", "op:r"), 1);
    });
    await abortAllDurableObjects();
    const restored = await runInDurableObject(sessionStub(name), (instance: SessionObject) => {
      const session = instance.session();
      return {
        state: session.getValue(value<{ current: null }>("pi.lane.state", "main"))?.value,
        frames: session.readList(list<number>("pi.pending.assistant_frame", "op:r")).map((f) => f.value),
      };
    });
    expect(restored).toEqual({ state: { current: null }, frames: [1] });
  });
});
