import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { reduceFrames } from "../../harness/execution/frame-reducer.ts";
import { type AssistantFrame, UpdateThrottle } from "../../harness/execution/frames.ts";
import { AssistantMessageSchema } from "../../schema/messages.ts";
import { Stream } from "./frames-stream.ts";

/** The text (or thinking) of each reduced block, "" for tool calls. */
const textsOf = (frames: readonly AssistantFrame[]): string[] =>
  (reduceFrames(frames)?.content ?? []).map((b) =>
    b.type === "text" ? b.text : b.type === "thinking" ? b.thinking : "",
  );

/** Thinking and text interleaved by index, a redacted thinking block, one ended and one unfinished tool call. */
function mixedStream(): Stream {
  const s = new Stream();
  const tick = () => (s.now += 40);
  s.start();
  s.thinkingStart(0);
  s.textStart(1);
  for (let k = 0; k < 30; k++) {
    tick();
    s.thinkingDelta(0, `think${k} `);
    s.textDelta(1, `word${k} `);
  }
  s.thinkingEnd(0, { thinkingSignature: "sig-0" });
  s.textEnd(1, { textSignature: "tsig-1" });
  s.thinkingStart(2);
  s.thinkingEnd(2, { thinkingSignature: "opaque", redacted: true });
  s.toolStart(3, "call_1", "read");
  for (const piece of ['{"pa', 'th": "/a', '.txt", "lines": [1', ", 2]}"]) {
    tick();
    s.toolDelta(3, piece);
  }
  s.toolEnd(3, "thought");
  s.toolStart(4, "call_2", "write");
  for (const piece of ['{"path": "b', '.md", "body": "hel', "lo wor"]) {
    tick();
    s.toolDelta(4, piece);
  }
  return s;
}

describe("FrameCoalescer (D10)", () => {
  it("frames nothing for a response that settles within its first window", () => {
    const s = new Stream();
    expect(s.start()).toBeUndefined();
    s.textStart(0);
    s.textDelta(0, "quick");
    s.textEnd(0);
    expect(s.done()).toBeUndefined();
    expect(s.frames).toEqual([]);
  });

  it("frames the start header with the first window's content, copied rather than aliased", () => {
    const s = new Stream();
    s.partial.responseId = "resp_1";
    s.start();
    s.textStart(0);
    s.textDelta(0, "a");
    s.now += 250;
    const frame = s.textDelta(0, "b");
    expect(frame).toEqual({
      k: "start",
      message: {
        api: "openai-responses",
        provider: "openai",
        model: "gpt-test",
        timestamp: 1000,
        responseId: "resp_1",
        usage: s.partial.usage,
      },
      blocks: [{ i: 0, t: "text", text: "ab" }],
    });
    s.partial.usage.input = 99;
    expect(frame?.k === "start" && frame.message.usage.input).toBe(3);
  });

  it("coalesces 20,000 single-token deltas at 200 tokens/s into one frame per 250 ms", () => {
    const s = new Stream();
    s.start();
    expect(s.textStart(0)).toBeUndefined();
    let text = "";
    for (let k = 1; k <= 20_000; k++) {
      s.now = k * 5;
      s.textDelta(0, `t${k % 10} `);
      text += `t${k % 10} `;
    }
    s.textEnd(0);
    expect(s.done()).toBeUndefined();
    // one frame at every 50th delta (t = 250, 500, ..., 100,000); the first carries the header
    expect(s.frames).toHaveLength(400);
    expect(s.frames[0]?.k).toBe("start");
    const gaps = s.frameTimes.slice(1).map((t, k) => t - (s.frameTimes[k] ?? 0));
    expect(gaps.every((gap) => gap === 250)).toBe(true);
    expect(s.flush()).toEqual({ k: "delta", blocks: [{ i: 0, t: "text", end: {} }] });
    expect(s.flush()).toBeUndefined();
    expect(s.frames).toHaveLength(401);
    expect(textsOf(s.frames)).toEqual([text]);
    expect(reduceFrames(s.frames)).toEqual(s.expected());
  });

  it("frames early at 8 KB of new content, and the window restarts from that frame", () => {
    const s = new Stream();
    s.start();
    s.textStart(0);
    const framed: number[] = [];
    for (let k = 1; k <= 20; k++) {
      s.now = k;
      if (s.textDelta(0, "x".repeat(1000)) !== undefined) framed.push(k);
    }
    expect(framed).toEqual([9, 18]);
    s.now = 250; // 250 ms after start, 232 ms after the last frame
    expect(s.textDelta(0, "y")).toBeUndefined();
    s.now = 268;
    expect(s.textDelta(0, "z")).toEqual({ k: "delta", blocks: [{ i: 0, t: "text", text: `${"x".repeat(2000)}yz` }] });
    expect(textsOf(s.frames)).toEqual([`${"x".repeat(20_000)}yz`]);
  });

  it("counts tool-call argument text toward 8 KB and frames a quiet stream on its next event or poll", () => {
    const s = new Stream({ maxChars: 100 });
    s.start();
    s.toolStart(0, "c", "t");
    const early = s.toolDelta(0, `{"a": "${"q".repeat(100)}`);
    expect(early).toMatchObject({ blocks: [{ i: 0, t: "toolCall", id: "c", name: "t" }] });
    s.toolDelta(0, '"');
    expect(s.coalescer.poll()).toBeUndefined();
    s.now = 249;
    expect(s.coalescer.poll()).toBeUndefined();
    s.now = 250;
    expect(s.coalescer.poll()).toEqual({ k: "delta", blocks: [{ i: 0, t: "toolCall", args: '"' }] });
    expect(s.coalescer.poll()).toBeUndefined();
    s.now = 5000; // silence, then one event: framed at once, the window has long passed
    expect(s.toolDelta(0, "}")).toEqual({ k: "delta", blocks: [{ i: 0, t: "toolCall", args: "}" }] });
  });

  it("never frames terminal events; flush gives the remainder once", () => {
    const s = new Stream();
    expect(s.flush()).toBeUndefined();
    s.start();
    s.textStart(0);
    s.textDelta(0, "hi");
    const error = { ...s.partial, stopReason: "aborted" as const };
    expect(s.emit({ type: "error", reason: "aborted", error })).toBeUndefined();
    expect(s.done()).toBeUndefined();
    expect(s.flush()).toMatchObject({ k: "start", blocks: [{ i: 0, t: "text", text: "hi" }] });
    expect(s.flush()).toBeUndefined();
    s.textDelta(0, "!");
    expect(s.flush()).toEqual({ k: "delta", blocks: [{ i: 0, t: "text", text: "!" }] });
  });

  it("treats an update before start as an implicit start", () => {
    const s = new Stream();
    s.partial.content[0] = { type: "text", text: "a" };
    expect(s.emit({ type: "text_delta", contentIndex: 0, delta: "a", partial: s.partial })).toBeUndefined();
    expect(s.flush()?.k).toBe("start");
    expect(reduceFrames(s.frames)).toEqual(s.expected());
  });

  it("carries header fields that arrive after start", () => {
    const s = new Stream();
    s.start();
    s.flush();
    s.partial.responseId = "resp_late";
    s.partial.responseModel = "gpt-test-2025";
    s.textStart(0);
    expect(s.flush()).toEqual({
      k: "delta",
      blocks: [{ i: 0, t: "text" }],
      header: { responseId: "resp_late", responseModel: "gpt-test-2025" },
    });
    expect(reduceFrames(s.frames)).toEqual(s.expected());
  });
});

describe("reduceFrames", () => {
  it("reconstructs text, interleaved thinking blocks and tool calls exactly", () => {
    const s = mixedStream();
    s.flush();
    expect(s.frames.length).toBeGreaterThan(4);
    const reduced = reduceFrames(s.frames);
    expect(reduced).toEqual(s.expected());
    expect(reduced?.content[3]).toEqual({
      type: "toolCall",
      id: "call_1",
      name: "read",
      arguments: { path: "/a.txt", lines: [1, 2] },
      thoughtSignature: "thought",
    });
    // not ended: best-effort partial arguments, as the live partial showed them
    const unfinished = { path: "b.md", body: "hello wor" };
    expect(reduced?.content[4]).toEqual({ type: "toolCall", id: "call_2", name: "write", arguments: unfinished });
    expect(reduceFrames(JSON.parse(JSON.stringify(s.frames)))).toEqual(reduced);
  });

  it("gives a valid pending assistant for every prefix, its text a prefix of the final text", () => {
    const s = mixedStream();
    s.flush();
    const final = textsOf(s.frames);
    let grew = 0;
    for (let n = 1; n <= s.frames.length; n++) {
      const prefix = s.frames.slice(0, n);
      const reduced = reduceFrames(prefix);
      expect(v.is(AssistantMessageSchema, reduced)).toBe(true);
      expect(reduced?.stopReason).toBe("pending");
      const texts = textsOf(prefix);
      texts.forEach((text, k) => expect(final[k]?.startsWith(text)).toBe(true));
      if ((texts[1]?.length ?? 0) > 0 && texts[1] !== final[1]) grew++;
      expect(reduceFrames(JSON.parse(JSON.stringify(prefix)))).toEqual(reduced);
    }
    expect(grew).toBeGreaterThan(1); // several frames end mid-text
  });

  it("frames an ended tool call's parsed arguments instead of its pending raw text", () => {
    const s = new Stream();
    s.start();
    s.flush();
    s.toolStart(0, "c1", "bash");
    s.toolDelta(0, '{"cmd": "ls"}');
    s.toolEnd(0);
    const end = { id: "c1", name: "bash", arguments: { cmd: "ls" } };
    expect(s.flush()).toEqual({ k: "delta", blocks: [{ i: 0, t: "toolCall", id: "c1", name: "bash", end }] });
    s.toolStart(1, "c2", "bash");
    s.toolDelta(1, "{not json");
    s.toolEnd(1);
    s.flush();
    const reduced = reduceFrames(s.frames);
    expect(reduced).toEqual(s.expected());
    expect(reduced?.content[1]).toMatchObject({ arguments: {}, argumentsError: expect.any(String) });
  });

  it("uses the final text of an end event that differs from the deltas", () => {
    const s = new Stream();
    s.start();
    s.textStart(0);
    s.textDelta(0, "draft");
    s.now = 300;
    s.textDelta(0, " text");
    s.textEnd(0, { content: "final text" });
    s.flush();
    expect(s.frames.at(-1)).toEqual({ k: "delta", blocks: [{ i: 0, t: "text", end: { text: "final text" } }] });
    expect(reduceFrames(s.frames)).toEqual(s.expected());
  });

  it("is undefined without a start frame; a later start frame starts over", () => {
    expect(reduceFrames([])).toBeUndefined();
    expect(reduceFrames([{ k: "delta", blocks: [{ i: 0, t: "text", text: "orphan" }] }])).toBeUndefined();
    const first = new Stream();
    first.start();
    first.textStart(0);
    first.textDelta(0, "old");
    first.flush();
    const second = new Stream();
    second.partial.model = "other";
    second.start();
    second.flush();
    expect(reduceFrames([...first.frames, ...second.frames])).toEqual({ ...second.expected(), content: [] });
  });

  it("does not alias its input", () => {
    const s = mixedStream();
    s.flush();
    const snapshot = JSON.stringify(s.frames);
    const reduced = reduceFrames(s.frames);
    const call = reduced?.content[3];
    if (call?.type === "toolCall") call.arguments.path = "mutated";
    if (reduced !== undefined) reduced.usage.input = 42;
    expect(JSON.stringify(s.frames)).toBe(snapshot);
  });
});

describe("UpdateThrottle (wire, ~20 updates/s)", () => {
  it("emits at most once per 50 ms, non-resetting, and remembers a suppressed update", () => {
    let now = 0;
    const throttle = new UpdateThrottle(50, () => now);
    let emitted = 0;
    for (let k = 0; k < 200; k++) {
      now = k * 5;
      if (throttle.shouldEmit()) emitted++;
    }
    expect(emitted).toBe(20);
    expect(throttle.suppressed).toBe(true);
    now = 2000;
    expect(throttle.shouldEmit()).toBe(true);
    expect(throttle.suppressed).toBe(false);
    expect(throttle.shouldEmit()).toBe(false);
    throttle.reset();
    expect(throttle.shouldEmit()).toBe(true);
  });
});
