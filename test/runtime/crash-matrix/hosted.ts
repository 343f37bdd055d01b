import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { SessionObject } from "../../../durable-objects/session/session-object.ts";
import { INTERRUPTED_TOOL_MESSAGE } from "../../../harness/runtime/drive/tools/calls.ts";
import type { ScriptStep } from "../../../models/scripted/steps.ts";
import { laneSetup, useScript } from "../../api/lane-helpers.ts";
import { mcpScope, registerMcpServer } from "../../api/mcp-helpers.ts";
import { activate, ARGS_SCHEMA, prompt, putTool, settle, webhook } from "../../api/tool-api-helpers.ts";
import { objectInvariants } from "../invariants.ts";
import { never, shapeOf, transcriptOf, until, type Shape } from "../crash-rig.ts";
import type { IntentName, MatrixCase, Position } from "./table.ts";

// The hosted driver of the crash matrix: http and MCP tools call real local servers
// (test/node/tool-webhook-server.ts, test/node/mcp-test-server.ts), so these cases run in the
// session's own Durable Object, as the API runs them: the prompt goes through the REST API, a hook
// or event listener on the object's harness (or the server holding the call) parks the pass at
// the position, every object is killed, the restarted object's alarm resumes the operation, and
// the API's long poll waits for its record. Calls are counted at the server, so "replay: never
// runs at most once" is checked where the effect happens.

type Setup = Awaited<ReturnType<typeof laneSetup>>;

interface HostedTool {
  /** Calls the server received for this tool. */
  calls(): Promise<number>;
  name: string;
  replay: "never" | "safe";
}

/** Registers the intent's tool (a server that parks the first call when `park`), the script and the lane's tools. */
async function hostedTool(setup: Setup, intent: IntentName, park: boolean): Promise<HostedTool> {
  const [, kind, replay] = intent.split(":");
  if ((replay !== "never" && replay !== "safe") || (kind !== "http" && kind !== "mcp")) throw new Error(`${intent} is not a hosted tool intent`);
  let tool: HostedTool;
  let call: ScriptStep;
  if (kind === "http") {
    const hook = webhook(`matrix_${replay}`);
    const behaviour = park ? "park-first" : "echo";
    const created = await putTool(setup, "effect", { kind: "http", description: "an effect", parameters: ARGS_SCHEMA, url: hook.hookUrl(behaviour), replay });
    expect(created.status).toBe(201);
    await hook.trust(behaviour, (await created.json<{ secret: string }>()).secret);
    tool = { name: "effect", replay, calls: async () => (await hook.received()).length };
    call = { toolCalls: [{ name: "effect", arguments: { question: "q" } }] };
  } else {
    const scope = mcpScope(`matrix_${replay}`);
    const name = park ? "park_first" : "echo";
    await registerMcpServer(setup, "srv", { url: scope.url, prefix: "", replay: { [name]: replay } });
    tool = { name, replay, calls: async () => (await scope.calls()).filter((request) => request.tool === name).length };
    call = { toolCalls: [{ name, arguments: park ? {} : { text: "q" } }] };
  }
  await useScript(setup, [call, { text: "carried on" }]);
  await activate(setup, [tool.name]);
  return tool;
}

const objectOf = (setup: Setup) => env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`);

/** Parks the object's own pass at the position (the flag is read by the test: one process). */
async function parkAt(setup: Setup, position: Position): Promise<() => boolean> {
  let parked = false;
  const hold = () => {
    parked = true;
    return never<undefined>();
  };
  await runInDurableObject(objectOf(setup), async (instance: SessionObject) => {
    const harness = await instance.harness();
    // before_tool runs before the call's intent; tool_start is bound by the intent commit and
    // tool_end by the staging commit, and the batch awaits both deliveries.
    if (position === "before_intent") harness.hooks.on("before_tool", hold);
    if (position === "after_intent") harness.events.on("tool_start", hold);
    if (position === "after_settlement") harness.events.on("tool_end", hold);
  });
  return () => parked;
}

/** The call status the kill must leave at each position. */
const STATUS: Record<Position, string> = { before_intent: "planned", after_intent: "effect_pending", during_effect: "effect_pending", after_settlement: "outcome_ready" };

async function transcriptShape(setup: Setup): Promise<Shape[]> {
  return runInDurableObject(objectOf(setup), async (instance: SessionObject) => {
    const lane = (await instance.harness()).getLane("main");
    if (!lane) throw new Error("no lane");
    return shapeOf(transcriptOf(lane));
  });
}

const baselines = new Map<IntentName, Promise<Shape[]>>();

/** The same tool run uninterrupted (the server answering at once): its transcript shape. */
function hostedBaseline(intent: IntentName): Promise<Shape[]> {
  let shape = baselines.get(intent);
  if (!shape) {
    shape = (async () => {
      const setup = await laneSetup("matrix_base");
      await hostedTool(setup, intent, false);
      expect((await settle(setup, await prompt(setup))).status).toBe("completed");
      return transcriptShape(setup);
    })();
    baselines.set(intent, shape);
  }
  return shape;
}

/** Runs one hosted case: park, queue, kill, resume through the alarm, compare, count, check. */
export async function runHostedCase(c: MatrixCase): Promise<void> {
  const setup = await laneSetup("matrix");
  const during = c.position === "during_effect";
  const tool = await hostedTool(setup, c.intent, during);
  const parked = await parkAt(setup, c.position);
  const operationId = await prompt(setup);
  if (during) await untilServerCalled(tool);
  else await until(parked, "the pass to park");
  const queuedText = `queued while parked at tools ${c.position}`;
  const status = await runInDurableObject(objectOf(setup), async (instance: SessionObject) => {
    const lane = (await instance.harness()).getLane("main");
    const state = lane?.state.operation?.state;
    if (!lane || state?.at !== "tools") throw new Error(`parked at ${state?.at ?? "nothing"}, not tools`);
    // Queued input in flight at the kill (not awaited: its delivery may wait behind the parked one).
    void lane.nextRun(queuedText);
    await until(() => lane.state.inbox.some((item) => item.kind === "nextRun"), "the queued input");
    return state.batch.calls[0]?.status;
  });
  expect(status).toBe(STATUS[c.position]);
  const callsAtKill = await tool.calls();

  await abortAllDurableObjects();
  const record = await settle(setup, operationId);
  expect(record).toMatchObject({ operationId, status: "completed" });

  // The documented recovery (reference §4.8): a call whose effect may have started is replayed when
  // `safe`, and answered with the interruption result (never run again) when `never`.
  const effectStarted = c.position === "after_intent" || during;
  const interrupted = effectStarted && tool.replay === "never";
  const calls = await tool.calls();
  const expectedCalls = c.position === "after_settlement" ? 1 : interrupted ? callsAtKill : callsAtKill + 1;
  expect({ callsAtKill, calls }).toEqual({ callsAtKill: during ? 1 : c.position === "after_settlement" ? 1 : 0, calls: expectedCalls });

  const shape = await transcriptShape(setup);
  const result = shape.find((entry) => entry.role === "toolResult");
  if (interrupted) expect(result?.text.endsWith(INTERRUPTED_TOOL_MESSAGE)).toBe(true);
  const skeleton = (shapes: Shape[]) => shapes.map((entry) => ({ role: entry.role, stopReason: entry.stopReason, isError: entry.isError }));
  const expected = skeleton(await hostedBaseline(c.intent)).map((entry) => (entry.role === "toolResult" && interrupted ? { ...entry, isError: true } : entry));
  expect(skeleton(shape)).toEqual(expected);

  const violations = await runInDurableObject(objectOf(setup), (instance: SessionObject, state) =>
    objectInvariants(instance, state, undefined, { queued: [queuedText], effects: [{ tool: tool.name, replay: tool.replay, executions: calls }] }),
  );
  expect(violations).toEqual([]);
}

async function untilServerCalled(tool: HostedTool): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if ((await tool.calls()) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`the server never received a call of ${tool.name}`);
}
