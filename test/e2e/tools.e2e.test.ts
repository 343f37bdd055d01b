import type { IncomingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HarnessEvent, LaneSnapshot } from "../../schema/lane.ts";
import { startToolWebhookServer, type SignatureVerifier, type ToolWebhookServer } from "../node/tool-webhook-server.ts";
import { Api, createTenant, eventsOf, fold, isEvent, openLaneWatch, readAdminToken, settled, type Received, type WatchClient } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { importDocModule } from "./doc-blocks.ts";

// docs/tools.md against `npm start`: a session created with an http tool (a local webhook that
// checks every call with the docs' own verification example), a client tool and the builtin
// `wait`; a scripted run calls all three at once, the client tool is answered over REST, and a
// WebSocket watcher sees tool_start / tool_update / tool_end — its folded snapshot equals a fresh one.

type ToolEvent = Extract<HarnessEvent, { type: "tool_start" | "tool_update" | "tool_end" }>;

const ARGS = { type: "object", properties: { question: { type: "string" } }, required: ["question"] };

type VerifiedCall = (secretFor: (sessionId: string | undefined, tool: string) => string | undefined, headers: IncomingHttpHeaders, rawBody: string) => unknown;

/**
 * The check of docs/tools.md, loaded from the docs' own text: `verifiedCall` (which picks the secret
 * by the body's context and tool, then verifies with `verify`), given the secret the webhook trusts.
 */
async function documentedVerifier(): Promise<SignatureVerifier> {
  const loaded = await importDocModule<{ verifiedCall: VerifiedCall }>("docs/tools.md");
  return (secret, headers, rawBody) => loaded.verifiedCall((sessionId, tool) => (sessionId === "tools-e2e" && tool === "lookup" ? secret : undefined), headers, rawBody) !== null;
}

const isToolEvent = (event: HarnessEvent): event is ToolEvent => event.type === "tool_start" || event.type === "tool_update" || event.type === "tool_end";

describe("tools end to end", () => {
  let server: DevServer;
  let hooks: ToolWebhookServer;
  let api: Api;
  const sockets: WatchClient[] = [];

  beforeAll(async () => {
    hooks = await startToolWebhookServer({ verify: await documentedVerifier() });
    // Loopback webhook URLs are a local-development switch; it is set explicitly here so the test
    // holds whatever `npm start` defaults it to.
    server = await startDevServer();
    api = (await createTenant(new Api(server.baseUrl, readAdminToken()), "tools")).api;
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    for (const socket of sockets) await socket.close();
    await server?.stop();
    await hooks?.close();
  });

  it("a scripted run calls a signed webhook, a client tool answered over REST and wait; the watcher's fold equals a fresh snapshot", async () => {
    const sid = "tools-e2e";
    const hookUrl = `${hooks.url}/hooks/e2e/echo`;
    const created = await api.expect<{ toolSecrets: Record<string, string> }>(201, "POST", "/v1/sessions", {
      body: {
        id: sid,
        tools: {
          lookup: { kind: "http", description: "Looks things up", parameters: ARGS, url: hookUrl, replay: "safe" },
          ask_user: { kind: "client", description: "Asks the user", parameters: ARGS },
          wait: { kind: "builtin" },
        },
      },
    });
    const secret = created.toolSecrets.lookup;
    expect(Object.keys(created.toolSecrets)).toEqual(["lookup"]);
    expect((await fetch(`${hooks.url}/secrets/e2e/echo`, { method: "PUT", body: secret })).status).toBe(204);

    await api.expect(201, "PUT", `/v1/sessions/${sid}/lanes/main`, { body: { model: { provider: "scripted", modelId: "script" }, activeTools: ["lookup", "ask_user", "wait"] } });
    const steps = [
      { toolCalls: [{ name: "lookup", arguments: { question: "order 42?" } }, { name: "ask_user", arguments: { question: "refund?" } }, { name: "wait", arguments: { seconds: 2 } }] },
      { text: "All three answered." },
    ];
    for (const step of steps) await api.expect(201, "POST", `/v1/sessions/${sid}/lists/scripted/steps`, { body: step });

    const client = await openLaneWatch(server.baseUrl, api.token, sid, "main");
    sockets.push(client);
    const first = await client.next();
    if (first.type !== "snapshot") throw new Error("Expected a snapshot first");

    const { operationId } = await api.expect<{ operationId: string }>(202, "POST", `/v1/sessions/${sid}/lanes/main/operations`, { body: { kind: "prompt", prompt: "help me" } });
    const untilAsked = await client.until((message: Received) => message.type === "event" && message.event.type === "tool_start" && message.event.toolName === "ask_user");
    const asked = untilAsked.at(-1);
    if (asked?.type !== "event" || asked.event.type !== "tool_start") throw new Error("no tool_start for ask_user");
    expect(asked.event).toMatchObject({ executor: "client", args: { question: "refund?" } });

    // Mid-batch: `wait` has finished but cannot be placed before the unanswered ask_user (source
    // order), so the snapshot holds it as a settled-but-unplaced row (compared with the fold below).
    await client.until((message: Received) => message.type === "event" && message.event.type === "tool_end" && message.event.toolName === "wait");
    const mid = await api.expect<{ seq: number; snapshot: LaneSnapshot }>(200, "GET", `/v1/sessions/${sid}/lanes/main/snapshot`);
    expect(mid.snapshot.operation?.runningTools.map((row) => [row.toolName, row.status])).toEqual([
      ["ask_user", "running"],
      ["wait", "settled"],
    ]);

    await api.expect(202, "POST", `/v1/sessions/${sid}/lanes/main/operations/${operationId}/tool-results/${asked.event.toolCallId}`, {
      body: { content: [{ type: "text", text: "Refund approved" }] },
    });
    const again = await api.request<{ error: { code: string } }>("POST", `/v1/sessions/${sid}/lanes/main/operations/${operationId}/tool-results/${asked.event.toolCallId}`, {
      body: { content: [{ type: "text", text: "twice" }] },
    });
    expect(again.status).toBe(409);

    expect(await settled(api, sid, operationId)).toMatchObject({ status: "completed" });
    await client.until(isEvent("run_end", operationId));
    const events = eventsOf(client.log.slice(1)).map((entry) => entry.event);
    expect(events.filter((event) => event.type === "fault")).toEqual([]);
    const toolEvents = events.filter(isToolEvent);
    for (const name of ["lookup", "ask_user", "wait"]) {
      expect(toolEvents.filter((event) => event.toolName === name && event.type === "tool_start")).toHaveLength(1);
      expect(toolEvents.filter((event) => event.toolName === name && event.type === "tool_end")).toHaveLength(1);
    }
    expect(toolEvents.some((event) => event.type === "tool_update" && event.toolName === "wait")).toBe(true);
    expect(toolEvents.filter((event) => event.type === "tool_end").every((event) => event.type === "tool_end" && !event.isError)).toBe(true);

    const calls: { signatureValid: boolean; idempotencyKey: string; body: { invocationId: string; operationId: string } }[] = await (await fetch(`${hooks.url}/requests/e2e`)).json();
    expect(calls).toHaveLength(1);
    // Verified by the docs' verifiedCall, which found the secret by the context's session and tool.
    expect(calls[0]).toMatchObject({ signatureValid: true, body: { operationId, context: { sessionId: sid, lane: "main", operationId, metadata: {} } } });
    expect(calls[0]?.idempotencyKey).toBe(calls[0]?.body.invocationId);

    // The fold of the events up to a snapshot's seq equals that snapshot: mid-batch and at the end.
    const upToMid = eventsOf(client.log.slice(1)).filter((entry) => entry.seq <= mid.seq).map((entry) => entry.event);
    expect(fold(first.snapshot, upToMid)).toEqual(mid.snapshot);
    const fresh = await api.expect<{ seq: number; snapshot: LaneSnapshot }>(200, "GET", `/v1/sessions/${sid}/lanes/main/snapshot`);
    const folded = fold(first.snapshot, events);
    expect(folded).toEqual(fresh.snapshot);
    const results = fresh.snapshot.transcript.flatMap((entry) => (entry.type === "message" && entry.message.role === "toolResult" ? [entry.message.content.map((block) => (block.type === "text" ? block.text : "")).join("")] : []));
    expect(results).toEqual(['echo {"question":"order 42?"}', "Refund approved", "Waited 2 seconds"]);
  }, 90_000);
});
