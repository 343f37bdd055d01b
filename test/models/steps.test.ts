import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { parseScriptStep, ScriptStepSchema, stepToJson, type ScriptStep } from "../../models/scripted/steps.ts";

// The scripted step schema: exactly the API.md shapes, each with optional usage, chunkMs and delayMs.

const valid: ScriptStep[] = [
  { text: "hi" },
  { text: "hi", delayMs: 10, chunkMs: 2, usage: { input: 1, cost: { total: 0.5 } } },
  { toolCalls: [{ name: "read", arguments: { path: "a", nested: [1, { b: null }] } }] },
  { toolCalls: [] },
  { error: "boom" },
  { error: "boom", retryable: true },
  { overflow: true },
  { length: true, usage: { output: 3 } },
  { deferred: { ready: { text: "later" } } },
  { deferred: { pollAfterMs: 100, ready: { deferred: { ready: { error: "x", retryable: false } } } } },
  { thinking: "hmm", text: "ok", chunkMs: 0 },
];

const invalid: [unknown, string][] = [
  [null, "expected a step object, got null"],
  [[{ text: "a" }], "expected a step object, got an array"],
  [{}, "a step needs one of"],
  [{ text: 1 }, "text step: text: Invalid type"],
  [{ text: "a", delayMs: -1 }, "text step: delayMs:"],
  [{ text: "a", usage: { input: "1" } }, "text step: usage.input:"],
  [{ text: "a", usage: { bogus: 1 } }, 'unknown key "bogus"'],
  [{ toolCalls: [{ name: "", arguments: {} }] }, "toolCalls step: toolCalls.0.name:"],
  [{ toolCalls: [{ name: "x", arguments: [1] }] }, "toolCalls step: toolCalls.0.arguments:"],
  [{ error: "x", retryable: "yes" }, "error step: retryable:"],
  [{ overflow: false }, "overflow step: overflow:"],
  [{ length: 1 }, "length step: length:"],
  [{ deferred: { ready: { nope: 1 } } }, "deferred step: deferred.ready"],
  [{ deferred: {} }, "deferred step: deferred.ready"],
  [{ thinking: "a" }, "thinking step: text:"],
  [{ text: "a", toolCalls: [] }, 'unknown key "text"'],
];

describe("scripted steps", () => {
  it("accepts every API.md step shape", () => {
    for (const step of valid) {
      expect(parseScriptStep(step)).toEqual({ ok: true, step });
      expect(v.is(ScriptStepSchema, step)).toBe(true);
    }
  });

  it("refuses anything else, naming the problem", () => {
    for (const [input, message] of invalid) {
      const parsed = parseScriptStep(input);
      expect(parsed.ok, JSON.stringify(input)).toBe(false);
      if (!parsed.ok) expect(parsed.message, JSON.stringify(input)).toContain(message);
      expect(v.is(ScriptStepSchema, input)).toBe(false);
    }
  });

  it("stores a step as plain JSON, dropping absent optional fields", () => {
    expect(stepToJson({ text: "a", delayMs: undefined })).toEqual({ text: "a" });
    expect(parseScriptStep(stepToJson(valid[9] ?? { text: "" }))).toEqual({ ok: true, step: valid[9] });
  });
});
