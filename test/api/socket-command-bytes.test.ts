import { describe, expect, it } from "vitest";
import { connect, expectSnapshot, watchSetup } from "./watch-helpers.ts";

// docs/api-watch.md "Commands on the socket", Bounds: "a command frame is at most 256 KiB (larger
// prompts go over REST)". A frame over the bound is refused like an oversized message (1008,
// "Message too large"), whatever characters it is written in.

describe("the command frame bound", { timeout: 30_000 }, () => {
  it("a prompt frame of more than 256 KiB of UTF-8 is refused even when it has fewer than 256 Ki characters", async () => {
    const { key, sessionPath } = await watchSetup("rvcmdbytes");
    const client = await connect<unknown>(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(client);
    // 100,000 three-byte characters: about 293 KiB on the wire, 100,000 characters.
    const frame = JSON.stringify({ type: "prompt", id: "big", prompt: "€".repeat(100_000) });
    expect(new TextEncoder().encode(frame).byteLength).toBeGreaterThan(256 * 1024);
    client.send(frame);
    const outcome = await Promise.race([
      client.closed().then((closed) => ({ closed: closed.code })),
      client.next().then((message) => ({ answered: message.type })),
    ]);
    expect(outcome).toEqual({ closed: 1008 });
  });
});
