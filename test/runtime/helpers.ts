import { runInDurableObject } from "cloudflare:test";
import { createModelRegistry } from "../../models/registry.ts";
import { appendScriptSteps, SessionScriptSource } from "../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import { AgentHarness } from "../../harness/runtime/harness.ts";
import type { Session } from "../../harness/session/session.ts";
import type { HarnessEvent } from "../../schema/lane.ts";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { value } from "../../harness/session/addresses.ts";
import type { WakeScheduler } from "../../harness/runtime/core.ts";
import type { ToolsPort } from "../../harness/execution/tools.ts";
import { createSession } from "../helpers/sessions.ts";
import { operationKey } from "../../harness/session/builtin-addresses.ts";

export const ECHO = { provider: "scripted", modelId: "echo" } as const;
export const SCRIPT = { provider: "scripted", modelId: "script" } as const;

export interface Rig {
  session: Session;
  harness: AgentHarness;
  events: HarnessEvent[];
  wakes: { lane: string; operationId: string; at: number | "settled" }[];
}

/** A harness over the real session of a fresh SessionObject, with the scripted models. */
export interface RigOptions {
  model?: { provider: string; modelId: string };
  steps?: ScriptStep[];
  tools?: (session: Session) => ToolsPort;
}

export async function openRig(session: Session, options: RigOptions = {}): Promise<Rig> {
  if (options.steps) await appendScriptSteps(session, options.steps);
  const models = createModelRegistry({ scripted: true, scriptSource: () => new SessionScriptSource(session) });
  const wakes: Rig["wakes"] = [];
  const wake: WakeScheduler = {
    due: (lane, operationId, at) => wakes.push({ lane, operationId, at }),
    settled: (lane, operationId) => wakes.push({ lane, operationId, at: "settled" }),
  };
  const tools = options.tools?.(session);
  const { harness } = await AgentHarness.create({ session, models, seed: { model: options.model ?? ECHO }, wake, ...(tools && { tools }) });
  const events: HarnessEvent[] = [];
  harness.events.on("*", (event) => {
    events.push(event);
  });
  return { session, harness, events, wakes };
}

/** Runs `body` inside a fresh session object with a rig over its real storage. */
export async function withRig<T>(
  body: (rig: Rig) => Promise<T>,
  options: RigOptions = {},
): Promise<T> {
  const { stub } = await createSession("rt");
  return runInDurableObject(stub, async (instance: SessionObject) => body(await openRig(instance.session(), options)));
}

/** Every runtime-owned value of an operation that must be gone after its terminal (`pi.op.*`). */
export function leftoverOperationValues(session: Session, operationId: string): string[] {
  const namespaces = ["pi.op.meta", "pi.op.state", "pi.op.generation", "pi.op.tool_args", "pi.op.tool_memo", "pi.op.preparation", "pi.pending.tool_output"];
  // Meta and state are keyed by the packed id (builtin-addresses operationKey), the rest by its text.
  const prefixes = [...new Set([operationId, operationKey(operationId)])];
  return namespaces.flatMap((namespace) =>
    prefixes.flatMap((prefix) => session.scanValues(value<unknown>(namespace, prefix)).map((stored) => `${namespace}/${stored.address.key}`)),
  );
}

export const types = (events: readonly HarnessEvent[]): string[] => events.map((event) => event.type);
