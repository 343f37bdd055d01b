import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session-object.ts";
import { MAX_BUFFERED_BYTES } from "../../durable-objects/watch-hub.ts";
import { connect, expectSnapshot, prompt, settled, watchSetup } from "./watch-helpers.ts";

// Slow consumers are bounded (spec/API.md "Watch protocol"): a socket whose unsent output passes
// the bound is closed with 1013 and the other watchers keep receiving. workerd reports no
// `bufferedAmount` on server sockets locally, so the test makes one socket report a backlog.

describe("slow watch consumers", { timeout: 30_000 }, () => {
  it("are closed with 1013 while the other watchers keep receiving events", async () => {
    const { key, stub, sessionPath } = await watchSetup("slow");
    const slow = await connect(`${sessionPath}/lanes/main/watch`, key);
    const healthy = await connect(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(slow);
    await expectSnapshot(healthy);
    const marked = await runInDurableObject(stub, (_instance: SessionObject, state) => {
      const sockets = state.getWebSockets("lane:main");
      const [first] = sockets;
      if (!first) return 0;
      Object.defineProperty(first, "bufferedAmount", { value: MAX_BUFFERED_BYTES + 1, configurable: true });
      return sockets.length;
    });
    expect(marked).toBe(2);
    const operationId = await prompt(stub, "main", "are you there?");
    await settled(stub, "main", operationId);
    // The socket made slow (whichever client it serves) is the one closed, as a slow consumer.
    const first = await Promise.race([
      slow.closed().then((close) => ({ closed: slow, survivor: healthy, close })),
      healthy.closed().then((close) => ({ closed: healthy, survivor: slow, close })),
    ]);
    expect(first.close.code).toBe(1013);
    const { survivor } = first;
    survivor.send(JSON.stringify({ type: "resnapshot" }));
    const received = await survivor.until((message) => message.type === "snapshot");
    const fresh = received[received.length - 1];
    expect(fresh?.type === "snapshot" && fresh.snapshot.lastResult?.operationId).toBe(operationId);
  });
});
