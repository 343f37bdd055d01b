import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { isRetryableAssistantError } from "@earendil-works/pi-ai/utils/retry";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { createModelRegistry } from "../../models/registry.ts";
import {
  appendScriptSteps,
  scriptedCursor,
  scriptedSteps,
  SessionScriptSource,
} from "../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { JsonValue } from "../../schema/json.ts";
import { toWire } from "../../schema/wire.ts";
import { createSession, failure, sessionStub, unwrap } from "../helpers/sessions.ts";
import { drain, scriptedModel, userContext } from "./helpers.ts";

// The durable script: steps are the elements of the session list `scripted/steps`, the cursor is the
// value `scripted/cursor` (the seq of the last step taken), advanced in the same mutation that takes
// the step, so it survives the object's death.

type Stub = Awaited<ReturnType<typeof createSession>>["stub"];

/** Takes one step inside the object, through a fresh SessionScriptSource. */
function take(stub: Stub): Promise<ScriptStep | undefined> {
  return runInDurableObject(stub, (instance: SessionObject) => new SessionScriptSource(instance.session()).takeStep());
}

/** One scripted/script request through the registry inside the object; the final message. */
function request(stub: Stub) {
  return runInDurableObject(stub, async (instance: SessionObject) => {
    const models = createModelRegistry({ scripted: true, scriptSource: () => new SessionScriptSource(instance.session()) });
    return (await drain(models.streamSimple(scriptedModel(models, "script"), userContext("go")))).message;
  });
}

function cursor(stub: Stub): Promise<number | undefined> {
  return runInDurableObject(stub, (instance: SessionObject) => instance.session().getValue(scriptedCursor)?.value);
}

describe("the durable script source", () => {
  it("plays the steps of scripted/steps in order, one per request, moving scripted/cursor", async () => {
    const { stub } = await createSession("script-order");
    const seqs = await runInDurableObject(stub, async (instance: SessionObject) => {
      const result = await appendScriptSteps(instance.session(), [{ text: "one" }, { text: "two" }, { error: "three" }]);
      return result.seqs;
    });
    expect(await cursor(stub)).toBeUndefined();
    const first = await request(stub);
    expect(first.content).toEqual([{ type: "text", text: "one" }]);
    expect(await cursor(stub)).toBe(seqs[0]);
    expect((await request(stub)).content).toEqual([{ type: "text", text: "two" }]);
    expect(await request(stub)).toMatchObject({ stopReason: "error", errorMessage: "scripted: three" });
    expect(await cursor(stub)).toBe(seqs[2]);
    expect(await request(stub)).toMatchObject({ stopReason: "error", errorMessage: "scripted: no step left in scripted/steps" });
    // Exhaustion commits nothing; a step appended later is the next one taken.
    expect(await cursor(stub)).toBe(seqs[2]);
    unwrap(await stub.appendList("scripted", "steps", toWire({ text: "four" })));
    expect((await request(stub)).content).toEqual([{ type: "text", text: "four" }]);
  });

  it("keeps the cursor across abortAllDurableObjects(): after a crash the next request takes the NEXT step", async () => {
    const { name, stub } = await createSession("script-crash");
    for (const step of [{ text: "a" }, { text: "b" }, { text: "c" }]) {
      unwrap(await stub.appendList("scripted", "steps", toWire(step)));
    }
    expect(await take(stub)).toEqual({ text: "a" });
    await abortAllDurableObjects();
    const fresh = sessionStub(name);
    expect(await take(fresh)).toEqual({ text: "b" });
    await abortAllDurableObjects();
    expect((await request(sessionStub(name))).content).toEqual([{ type: "text", text: "c" }]);
    expect(await take(sessionStub(name))).toBeUndefined();
  });

  it("gives concurrent requests (lanes) distinct steps, in list order", async () => {
    const { stub } = await createSession("script-lanes");
    await runInDurableObject(stub, (instance: SessionObject) =>
      appendScriptSteps(instance.session(), [{ text: "x" }, { text: "y" }, { text: "z" }]),
    );
    const texts = await runInDurableObject(stub, async (instance: SessionObject) => {
      const models = createModelRegistry({ scripted: true, scriptSource: () => new SessionScriptSource(instance.session()) });
      const model = scriptedModel(models, "script");
      const played = await Promise.all([1, 2, 3].map(() => drain(models.streamSimple(model, userContext("go")))));
      return played.map((one) => one.message.content);
    });
    expect(texts).toEqual([[{ type: "text", text: "x" }], [{ type: "text", text: "y" }], [{ type: "text", text: "z" }]]);
  });

  it("turns a schema-invalid element into a non-retryable error response and moves on", async () => {
    const { stub } = await createSession("script-invalid");
    const elements: JsonValue[] = [{ nope: true }, "just text", { text: 5 }, { text: "ok", extra: 1 }, { text: "fine" }];
    // The API refuses such elements (see the next test); stored ones (written by an older version,
    // or by the engine directly) are still parsed when taken.
    await runInDurableObject(stub, async (instance: SessionObject) => {
      for (const element of elements) await instance.session().appendList(scriptedSteps, element);
    });
    const invalid = [await request(stub), await request(stub), await request(stub), await request(stub)];
    for (const message of invalid) {
      expect(message.stopReason).toBe("error");
      expect(message.errorMessage).toMatch(/^scripted: the step at seq \d+ of scripted\/steps is invalid: /);
      expect(isRetryableAssistantError(message)).toBe(false);
    }
    expect(invalid[0]?.errorMessage).toContain("a step needs one of");
    expect(invalid[1]?.errorMessage).toContain("expected a step object, got string");
    expect(invalid[2]?.errorMessage).toContain("text step: text:");
    expect(invalid[3]?.errorMessage).toContain('unknown key "extra"');
    expect((await request(stub)).content).toEqual([{ type: "text", text: "fine" }]);
  });

  it("refuses an invalid step at append (400 ValidationFailed), usage out of bounds included", async () => {
    const { stub } = await createSession("script-refused");
    const refused: JsonValue[] = [{ nope: true }, { text: "x", usage: { input: 1e308 } }, { text: "x", usage: { output: 1.5 } }, { text: "x", usage: { cost: { total: -1 } } }];
    for (const element of refused) {
      expect(failure(await stub.appendList("scripted", "steps", toWire(element))).code).toBe("ValidationFailed");
    }
    const accepted = await stub.appendList("scripted", "steps", toWire({ text: "x", usage: { input: 1e12, cost: { total: 1e9 } } }));
    expect(unwrap(accepted)).toEqual({ seq: expect.any(Number) });
    expect(await take(stub)).toEqual({ text: "x", usage: { input: 1e12, cost: { total: 1e9 } } });
  });

  it("take() reports the element's seq and commits it as the cursor", async () => {
    const { stub } = await createSession("script-commit");
    const result = await runInDurableObject(stub, async (instance: SessionObject) => {
      const session = instance.session();
      const appended = await session.appendList(scriptedSteps, { text: "only" });
      const source = new SessionScriptSource(session);
      const taken = await source.take();
      const stored = session.getValue(scriptedCursor);
      return { appended: appended.firstSeq, taken, stored };
    });
    expect(result.taken).toEqual({ seq: result.appended, step: { text: "only" } });
    expect(result.stored?.value).toBe(result.appended);
    expect(result.stored?.seq).toBeGreaterThan(result.appended);
  });
});
