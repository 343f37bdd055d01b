import { runInDurableObject } from "cloudflare:test";
import type { Context, SimpleStreamOptions } from "@earendil-works/pi-ai";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { ModelsPort } from "../../harness/execution/models.ts";
import type { ToolsPort } from "../../harness/execution/tools.ts";
import { AgentHarness } from "../../harness/runtime/harness.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { Session } from "../../harness/session/session.ts";
import { createModelRegistry } from "../../models/registry.ts";
import { appendScriptSteps, SessionScriptSource } from "../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { CompactionEntry, Entry } from "../../schema/entries.ts";
import type { HarnessEvent } from "../../schema/lane.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import { createSession } from "../helpers/sessions.ts";
import { SqlSessionStorage } from "../../durable-objects/session/storage/sql-session-storage.ts";
import type { UsageRow } from "../../schema/usage.ts";
import { ECHO } from "./helpers.ts";

// A harness over a real session object whose Models port records every provider request (the
// context and options the model receives) and can make the lane's model disappear.

export interface SeenRequest {
  context: Context;
  options: SimpleStreamOptions | undefined;
}

export interface CompactionRig {
  session: Session;
  harness: AgentHarness;
  lane: AgentLane;
  events: HarnessEvent[];
  requests: SeenRequest[];
  /** While true, the Models port resolves no model; `cancels` lists the deferred handles it was asked to cancel. */
  models: { missing: boolean; cancels: string[] };
  usageRows(): UsageRow[];
}

/** Compaction settings that keep only the newest ~20 tokens (the last turn of the tests' prompts). */
export const COMPACT_EAGERLY: HarnessSettingsPatch = { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 20 }, retry: { enabled: true, maxRetries: 2, baseDelayMs: 0 } };

export async function withCompactionRig<T>(
  body: (rig: CompactionRig) => Promise<T>,
  options: { model?: { provider: string; modelId: string }; steps?: ScriptStep[]; settings?: HarnessSettingsPatch; tools?: (session: Session) => ToolsPort } = {},
): Promise<T> {
  const { stub } = await createSession("cmp");
  return runInDurableObject(stub, async (instance: SessionObject, state) => {
    const session = instance.session();
    if (options.steps) await appendScriptSteps(session, options.steps);
    const registry = createModelRegistry({ scripted: true, scriptSource: () => new SessionScriptSource(session) });
    const requests: SeenRequest[] = [];
    const flags = { missing: false, cancels: [] as string[] };
    const models: ModelsPort = {
      getModel: (provider, modelId) => (flags.missing ? undefined : registry.getModel(provider, modelId)),
      streamSimple: (model, context, streamOptions) => {
        requests.push({ context: structuredClone(context), options: streamOptions && { ...streamOptions, signal: undefined } });
        return registry.streamSimple(model, context, streamOptions);
      },
      streamDeferred: (model, handle, streamOptions) => registry.streamDeferred(model, handle, streamOptions),
      cancelDeferred: (model, handle, streamOptions) => {
        flags.cancels.push(handle.id);
        return registry.cancelDeferred(model, handle, streamOptions);
      },
    };
    const { harness } = await AgentHarness.create({ session, models, seed: { model: options.model ?? ECHO }, ...(options.tools && { tools: options.tools(session) }) });
    if (options.settings) await harness.updateSettings(options.settings);
    const events: HarnessEvent[] = [];
    harness.events.on("*", (event) => {
      events.push(event);
    });
    const lane = await harness.lane("main");
    return body({
      session,
      harness,
      lane,
      events,
      requests,
      models: flags,
      usageRows: () => SqlSessionStorage.open(state.storage)?.scanUsage() ?? [],
    });
  });
}

/** The compaction entries on the lane's branch, oldest first. */
export function compactionsOf(lane: AgentLane): CompactionEntry[] {
  return lane.findEntries({ order: "oldestFirst" }).filter((entry: Entry): entry is CompactionEntry => entry.type === "compaction");
}

/** The text a provider request carries, message by message. */
export function requestTexts(request: SeenRequest | undefined): string[] {
  return (request?.context.messages ?? []).map((message) => {
    if (typeof message.content === "string") return message.content;
    return message.content.map((block) => (block.type === "text" ? block.text : block.type === "toolCall" ? `[call ${block.name}]` : "")).join("");
  });
}
