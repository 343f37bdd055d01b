import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import { toWire } from "../../schema/wire.ts";
import { unwrap } from "../helpers/sessions.ts";
import { call, errorCode, newTenant } from "./helpers.ts";

let counter = 0;

/** A fresh tenant with one session created through the API. */
export async function tenantWithSession(prefix: string): Promise<{ tenantId: string; key: string; sid: string; base: string }> {
  const tenant = await newTenant(prefix);
  const sid = `${prefix}_${(counter++).toString(36)}`;
  const created = await call("/v1/sessions", { body: { id: sid }, token: tenant.key });
  expect(created.status).toBe(201);
  return { tenantId: tenant.tenantId, key: tenant.key, sid, base: `/v1/sessions/${sid}` };
}

/** The session object behind the API, for setting up state the public surface does not expose yet. */
export function objectOf(tenantId: string, sid: string) {
  return env.SESSIONS.getByName(`${tenantId}:${sid}`);
}

/**
 * Lane `lane` on the scripted/script model, with `steps` appended to `scripted/steps`; returns the
 * stub. A slow `{ text, chunkMs }` step keeps a run busy long enough to observe it.
 */
export async function scriptedLane(tenantId: string, sid: string, steps: ScriptStep[], lane = "main") {
  const stub = objectOf(tenantId, sid);
  unwrap(await stub.acquireLane(lane));
  unwrap(await stub.configureLane(lane, toWire({ model: { provider: "scripted", modelId: "script" } })));
  await runInDurableObject(stub, async (instance: SessionObject) => {
    await appendScriptSteps(instance.session(), steps);
  });
  return stub;
}

/** A long text streamed word by word, 50 ms apart: a run that stays busy for seconds. */
export const SLOW_STEP: ScriptStep = { text: Array.from({ length: 100 }, (_, i) => `w${i}`).join(" "), chunkMs: 50 };

/** Expects `response` to carry `status` and the error `code`. */
export async function expectError(response: Response, status: number, code: string): Promise<void> {
  expect({ status: response.status, code: await errorCode(response) }).toEqual({ status, code });
}

/** A user message as the API takes it. */
export const user = (text: string) => ({ role: "user", content: text, timestamp: 1 });

/** The raw JSON text of each read at `paths`, each expected to answer 200 (before/after comparisons). */
export async function readTexts(paths: readonly string[], token: string): Promise<string[]> {
  const texts: string[] = [];
  for (const path of paths) {
    const response = await call(path, { token });
    expect(response.status, path).toBe(200);
    texts.push(await response.text());
  }
  return texts;
}
