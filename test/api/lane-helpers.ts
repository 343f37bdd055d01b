import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { SessionHost } from "../../durable-objects/session/session-host.ts";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { LaneExecutionInfo } from "../../schema/lane.ts";
import { call, newTenant } from "./helpers.ts";

let counter = 0;

/** A tenant with one session and the lane `main` on it. */
export async function laneSetup(prefix: string) {
  const tenant = await newTenant(prefix);
  const sid = `s_${prefix}_${(counter++).toString(36)}`;
  const session = await call("/v1/sessions", { body: { id: sid }, token: tenant.key });
  if (session.status !== 201) throw new Error(`session creation failed: ${session.status} ${await session.text()}`);
  const lane = await call(`/v1/sessions/${sid}/lanes/main`, { method: "PUT", token: tenant.key });
  if (lane.status !== 201) throw new Error(`lane creation failed: ${lane.status} ${await lane.text()}`);
  return { ...tenant, sid, sessionPath: `/v1/sessions/${sid}`, lanePath: `/v1/sessions/${sid}/lanes/main` };
}

/** Appends steps to the session's `scripted/steps` and switches the lane to `scripted/script`. */
export async function useScript(setup: { tenantId: string; sid: string; key: string; lanePath: string }, steps: ScriptStep[]): Promise<void> {
  const stub = env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`);
  await runInDurableObject(stub, (instance: SessionObject) => appendScriptSteps(instance.session(), steps));
  const patched = await call(`${setup.lanePath}/config`, { method: "PATCH", body: { model: { provider: "scripted", modelId: "script" } }, token: setup.key });
  expect(patched.status).toBe(200);
}

/** A text step that streams word by word, long enough to act on it mid-stream. */
export const slowStep = (words = 60): { text: string; chunkMs: number } => ({
  text: Array.from({ length: words }, (_, i) => `w${i}`).join(" "),
  chunkMs: 30,
});

export async function execution(setup: { key: string; lanePath: string }): Promise<LaneExecutionInfo> {
  const response = await call(setup.lanePath, { token: setup.key });
  expect(response.status).toBe(200);
  return response.json<LaneExecutionInfo>();
}

/** Polls the lane (bounded, no timing assertion) until its operation sits at `leaf`. */
export async function untilAt(setup: { key: string; lanePath: string }, leaf: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if ((await execution(setup)).current?.at === leaf) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`the operation never reached ${leaf}`);
}

/**
 * Until the session holds the lane's slot (answered: its reservation id): the forward that grants
 * it goes out after the answer, so a prompt sent the moment the previous one answered may still
 * find none (and reserve).
 */
export async function untilHeld(setup: { tenantId: string; sid: string }): Promise<string> {
  const session = env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`);
  for (let attempt = 0; attempt < 500; attempt++) {
    const held = await runInDurableObject(session, (instance: SessionObject) => {
      const host: SessionHost = Reflect.get(instance, "host");
      return host.heldSlots.heldFor("main");
    });
    if (held !== undefined) return held;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the session never held the lane's slot");
}
