import type { Api, AssistantMessage, AssistantMessageEvent, AssistantMessageEventStream, Context, Model } from "@earendil-works/pi-ai";
import type { MutableModels } from "@earendil-works/pi-ai/models";
import { createModelRegistry } from "../../models/registry.ts";
import type { ScriptSource } from "../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";

/** An in-memory script: steps are taken from the front, in order. */
export function memorySource(steps: ScriptStep[]): ScriptSource & { taken: number } {
  const source = {
    taken: 0,
    async takeStep(): Promise<ScriptStep | undefined> {
      const step = steps.shift();
      if (step) source.taken++;
      return step;
    },
  };
  return source;
}

/** A registry with the scripted provider, playing `steps` on `scripted/script`. */
export function scriptedRegistry(steps: ScriptStep[] = []): { models: MutableModels; source: ReturnType<typeof memorySource> } {
  const source = memorySource(steps);
  return { models: createModelRegistry({ scripted: true, scriptSource: () => source }), source };
}

export function scriptedModel(models: MutableModels, id: "echo" | "script"): Model<Api> {
  const model = models.getModel("scripted", id);
  if (!model) throw new Error(`scripted/${id} is not registered`);
  return model;
}

export function userContext(...texts: string[]): Context {
  return { messages: texts.map((text, index) => ({ role: "user", content: text, timestamp: index + 1 })) };
}

export interface Played {
  events: AssistantMessageEvent[];
  types: string[];
  message: AssistantMessage;
}

/** Drains a stream, recording every event; `message` is the stream's final result. */
export async function drain(
  stream: AssistantMessageEventStream,
  onEvent?: (event: AssistantMessageEvent) => void,
): Promise<Played> {
  const events: AssistantMessageEvent[] = [];
  for await (const event of stream) {
    events.push(event);
    onEvent?.(event);
  }
  return { events, types: events.map((event) => event.type), message: await stream.result() };
}

/** Plays the next scripted step through the registry's real `streamSimple`. */
export async function playScript(models: MutableModels, context: Context = userContext("go")): Promise<Played> {
  return drain(models.streamSimple(scriptedModel(models, "script"), context));
}

export function deltas(played: Played, type: "text_delta" | "thinking_delta" | "toolcall_delta"): string[] {
  return played.events.flatMap((event) => (event.type === type ? [event.delta] : []));
}
