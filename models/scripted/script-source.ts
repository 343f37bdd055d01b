import { list, value, type Value, type ValueList } from "../../harness/session/addresses.ts";
import type { Session } from "../../harness/session/session.ts";
import type { CommitResult } from "../../harness/session/storage.ts";
import { appendList, setValue } from "../../harness/session/writes.ts";
import type { JsonValue } from "../../schema/json.ts";
import { parseScriptStep, stepToJson, type ScriptStep } from "./steps.ts";

// The durable step source of `scripted/script` (API.md): the steps are the elements of the session
// list `scripted/steps`; the value `scripted/cursor` holds the seq of the last step taken. Taking a
// step reads the cursor, reads the next element after it and commits the advanced cursor in one
// mutation, so the cursor moves when a request is admitted: after a crash the next request takes the
// next step, and retries and lanes consume steps strictly in order, one per provider request.

/** Elements are stored unvalidated (they arrive as JSON over the API); they are parsed when taken. */
export const scriptedSteps: ValueList<JsonValue> = list("scripted", "steps");
/** The seq of the last element taken from `scripted/steps`. */
export const scriptedCursor: Value<number> = value("scripted", "cursor");

/** Where `scripted/script` gets its next step; one call per provider request. */
export interface ScriptSource {
  /** The next step, advancing the cursor; `undefined` when the script is exhausted. */
  takeStep(): Promise<ScriptStep | undefined>;
}

/** A step taken from the list, with the seq of its element. */
export interface TakenStep {
  seq: number;
  step: ScriptStep;
}

/** The ScriptSource of one session. */
export class SessionScriptSource implements ScriptSource {
  constructor(private readonly session: Session) {}

  async takeStep(): Promise<ScriptStep | undefined> {
    return (await this.take())?.step;
  }

  /** Like `takeStep`, also reporting the element's seq. One mutation, at most one commit. */
  take(): Promise<TakenStep | undefined> {
    return this.session.mutate((m): TakenStep | undefined => {
      const cursor = m.getValue(scriptedCursor)?.value;
      const [next] = m.readList(scriptedSteps, {
        order: "asc",
        limit: 1,
        ...(cursor !== undefined && { cursor: { seq: cursor } }),
      });
      if (!next) return undefined;
      m.commit([setValue(scriptedCursor, next.seq)]);
      const parsed = parseScriptStep(next.value);
      if (parsed.ok) return { seq: next.seq, step: parsed.step };
      return {
        seq: next.seq,
        step: { error: `scripted: the step at seq ${next.seq} of scripted/steps is invalid: ${parsed.message}` },
      };
    });
  }
}

/** Appends steps to `scripted/steps` in one commit (a convenience for tests and local tooling). */
export function appendScriptSteps(session: Session, steps: readonly ScriptStep[]): Promise<CommitResult> {
  return session.mutate((m) => m.commit(steps.map((step) => appendList(scriptedSteps, stepToJson(step)))));
}

/**
 * Why `element` cannot be appended to `namespace`/`key`, or undefined: an element of
 * `scripted/steps` must be a valid step (usage within bounds included), so a bad script is refused
 * with 400 when it is appended rather than failing a run later. Other lists take any JSON.
 */
export function scriptElementProblem(namespace: string, key: string, element: JsonValue): string | undefined {
  if (namespace !== scriptedSteps.namespace || key !== scriptedSteps.key) return undefined;
  const parsed = parseScriptStep(element);
  return parsed.ok ? undefined : parsed.message;
}
