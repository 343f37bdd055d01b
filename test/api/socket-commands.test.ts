import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import { slowStep, untilHeld } from "./lane-helpers.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import type { HarnessEvent } from "../../schema/lane.ts";
import { adminToken, call } from "./helpers.ts";
import { recordCalls } from "./tenant-calls.ts";
import { connect, expectSnapshot, watchSetup, type Client, type Received } from "./watch-helpers.ts";

// Spec "Commands on the lane socket": prompt, queue and abort frames on a lane's watch socket,
// answered with a `reply` carrying what the REST twin answers, a repeated id answered again
// without doing anything twice, authorized by the socket's own authentication (a browser token
// needs the prompt scope), the request quota spent from a lease the session object holds.

/** A command's `reply` frame (the socket helper's inbox holds every JSON frame it received). */
const ReplySchema = v.object({
  type: v.literal("reply"),
  id: v.string(),
  status: v.number(),
  body: v.looseObject({ error: v.optional(v.looseObject({ code: v.string() })) }),
});
type Reply = v.InferOutput<typeof ReplySchema>;

function isReply(id: string): (message: Received<unknown>) => boolean {
  return (message) => {
    const reply = v.safeParse(ReplySchema, message);
    return reply.success && reply.output.id === id;
  };
}

async function replyTo(client: Client<unknown>, id: string): Promise<{ reply: Reply; before: Received<unknown>[] }> {
  const read = await client.until(isReply(id));
  return { reply: v.parse(ReplySchema, read.at(-1)), before: read.slice(0, -1) };
}

const eventTypes = (messages: Received<unknown>[]): string[] =>
  messages.flatMap((message) => (message.type === "event" ? [(message as { event: HarnessEvent }).event.type] : []));

async function laneSocket(prefix: string) {
  const setup = await watchSetup(prefix);
  const client = await connect<unknown>(`${setup.sessionPath}/lanes/main/watch`, setup.key);
  await expectSnapshot(client);
  return { setup, client };
}

describe("commands on the lane socket", () => {
  it("a prompt frame starts a run answered with the REST twin's 202; a repeated id answers the same operation and starts nothing", async () => {
    const { setup, client } = await laneSocket("sockp");
    client.send(JSON.stringify({ type: "prompt", id: "c1", prompt: "hello over the socket" }));
    const { reply, before } = await replyTo(client, "c1");
    expect(reply).toMatchObject({ status: 202, body: { operationId: expect.any(String), kind: "run", startedAt: expect.any(Number) } });
    const operationId = String(reply.body.operationId);
    // The run's events come before or among the reply, as the spec allows.
    const isEnd = (message: Received<unknown>): boolean => message.type === "event" && (message as { event: HarnessEvent }).event.type === "run_end";
    const run = before.some(isEnd) ? before : [...before, ...(await client.until(isEnd))];
    expect(eventTypes(run)).toContain("run_start");

    client.send(JSON.stringify({ type: "prompt", id: "c1", prompt: "hello over the socket" }));
    const again = await replyTo(client, "c1");
    expect(again.reply).toEqual(reply);
    const lane = await (await call(`${setup.sessionPath}/lanes/main`, { token: setup.key })).json<{ lastOperationId: string; current: unknown }>();
    expect(lane).toMatchObject({ lastOperationId: operationId, current: null });
    const transcript = await (await call(`${setup.sessionPath}/lanes/main/snapshot`, { token: setup.key })).json<{ snapshot: { transcript: unknown[] } }>();
    expect(transcript.snapshot.transcript).toHaveLength(2);
    // Its open-operation slot was reserved and, with the settlement, freed; the slot held ahead for
    // the socket's next prompt (the tenant's quota is mostly free) is not an open operation.
    let open = -1;
    for (let attempt = 0; attempt < 400 && open !== 0; attempt++) {
      open = await env.TENANTS.getByName(setup.tenantId).openOperationCount();
      if (open !== 0) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(open).toBe(0);
    // The same id for another command is refused.
    client.send(JSON.stringify({ type: "prompt", id: "c1", prompt: "something else" }));
    expect((await replyTo(client, "c1")).reply).toMatchObject({ status: 422, body: { error: { code: "IdempotencyConflict" } } });
    client.ws.close();
  });

  it("queue and abort frames answer like POST …/queue and POST …/abort; a busy prompt answers 409 LaneBusy and may be sent again", async () => {
    const { setup, client } = await laneSocket("sockq");
    await runInDurableObject(setup.stub, (instance: SessionObject) => appendScriptSteps(instance.session(), [slowStep(80), { text: "spare" }]));
    expect((await call(`${setup.sessionPath}/lanes/main/config`, { method: "PATCH", body: { model: { provider: "scripted", modelId: "script" } }, token: setup.key })).status).toBe(200);
    client.send(JSON.stringify({ type: "prompt", id: "p1", prompt: "long one" }));
    const started = await replyTo(client, "p1");
    expect(started.reply.status).toBe(202);
    client.send(JSON.stringify({ type: "queue", id: "q1", kind: "followUp", message: "afterwards" }));
    expect((await replyTo(client, "q1")).reply).toMatchObject({ status: 201, body: { entryId: expect.any(String) } });
    client.send(JSON.stringify({ type: "prompt", id: "p2", prompt: "too soon" }));
    expect((await replyTo(client, "p2")).reply).toMatchObject({ status: 409, body: { error: { code: "LaneBusy" } } });
    client.send(JSON.stringify({ type: "abort", id: "a1" }));
    const aborted = await replyTo(client, "a1");
    expect(aborted.reply).toMatchObject({ status: 200, body: { operationId: started.reply.body.operationId, newlyRequested: true, followUp: [{ role: "user", content: "afterwards" }] } });
    // A refused command is not remembered: the same id may be sent again once the lane is idle.
    if (!aborted.before.some((message) => message.type === "event" && (message as { event: HarnessEvent }).event.type === "run_end")) {
      await client.until((message) => message.type === "event" && (message as { event: HarnessEvent }).event.type === "run_end");
    }
    client.send(JSON.stringify({ type: "prompt", id: "p2", prompt: "now", ifBusy: "enqueue" }));
    expect((await replyTo(client, "p2")).reply.status).toBe(202);
    client.ws.close();
  });

  it("a steer prompt frame at the tenant's open-operations quota is handed to the running run (no slot), as over REST", async () => {
    const { setup, client } = await laneSocket("socksq");
    const quotas = await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 1 }, token: adminToken() });
    expect(quotas.status).toBe(200);
    await runInDurableObject(setup.stub, (instance: SessionObject) => appendScriptSteps(instance.session(), [slowStep(80), { text: "spare" }]));
    expect((await call(`${setup.sessionPath}/lanes/main/config`, { method: "PATCH", body: { model: { provider: "scripted", modelId: "script" } }, token: setup.key })).status).toBe(200);
    client.send(JSON.stringify({ type: "prompt", id: "run", prompt: "long one" }));
    const started = await replyTo(client, "run");
    expect(started.reply.status).toBe(202);
    client.send(JSON.stringify({ type: "prompt", id: "steer", prompt: "this way", ifBusy: "steer" }));
    expect((await replyTo(client, "steer")).reply).toMatchObject({ status: 202, body: { operationId: started.reply.body.operationId, queued: "steer" } });
    client.ws.close();
  });

  it("a malformed command gets a 400 reply; a watch-only browser token's socket may not command; the request quota applies", async () => {
    const { setup, client } = await laneSocket("sockv");
    client.send(JSON.stringify({ type: "queue", id: "bad", kind: "sideways", message: "x" }));
    expect((await replyTo(client, "bad")).reply).toMatchObject({ status: 400, body: { error: { code: "ValidationFailed" } } });

    const minted = await call(`${setup.sessionPath}/tokens`, { body: { scopes: ["watch"] }, token: setup.key });
    expect(minted.status).toBe(201);
    const { token } = await minted.json<{ token: string }>();
    const watcher = await connect<unknown>(`${setup.sessionPath}/lanes/main/watch`, { protocols: [`bearer.${token}`] });
    await expectSnapshot(watcher);
    watcher.send(JSON.stringify({ type: "prompt", id: "w1", prompt: "not allowed" }));
    expect((await replyTo(watcher, "w1")).reply).toMatchObject({ status: 403, body: { error: { code: "TokenScope" } } });

    // A quota of one request a minute (already spent by this test's own requests): commands are 429.
    const quotas = await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { requestsPerMinute: 1 }, token: adminToken() });
    expect(quotas.status).toBe(200);
    const answers: Reply[] = [];
    for (const id of ["k1", "k2", "k3"]) {
      client.send(JSON.stringify({ type: "queue", id, kind: "nextRun", message: id }));
      answers.push((await replyTo(client, id)).reply);
    }
    expect(answers.filter((reply) => reply.status === 429).map((reply) => reply.body.error?.code)).toContain("RateLimited");
    watcher.ws.close();
    client.ws.close();
  });

  it("commands cost no tenant-object call each: a socket's queue frames are spent from one lease", async () => {
    const { setup, client } = await laneSocket("sockl");
    const calls = await countAuthorizeLease(setup.tenantId, async () => {
      for (let index = 0; index < 10; index++) {
        client.send(JSON.stringify({ type: "queue", id: `n${index}`, kind: "nextRun", message: `item ${index}` }));
        expect((await replyTo(client, `n${index}`)).reply.status).toBe(201);
      }
    });
    expect(calls).toBeLessThanOrEqual(1);
    client.ws.close();
  });

  it("a prompt takes the slot the session holds ahead: after the first, no reservation waits on the tenant; near the quota none is held", async () => {
    const { setup, client } = await laneSocket("socks");
    const recorder = await recordCalls(setup.tenantId);
    try {
      const turn = async (id: string) => {
        client.send(JSON.stringify({ type: "prompt", id, prompt: `turn ${id}` }));
        const { reply } = await replyTo(client, id);
        expect(reply.status).toBe(202);
        await client.until((message) => message.type === "event" && (message as { event: HarnessEvent }).event.type === "run_end");
      };
      await turn("s1");
      // The slot for the next prompt comes with the first one's settlement forward, off its path.
      await until(async () => (await recorder.read()).includes("operationsSettled"));
      const held = await untilHeld({ tenantId: setup.tenantId, sid: setup.sessionId });
      const before = (await recorder.read()).length;
      await turn("s2");
      // Settled within a second, unbound: the slot goes back to the lane (as an HTTP prompt's does),
      // so the tenant is neither asked for a reservation nor told of a binding.
      expect(await untilHeld({ tenantId: setup.tenantId, sid: setup.sessionId })).toBe(held);
      const second = (await recorder.read()).slice(before);
      expect(second).not.toContain("reserveOperation");
      expect(second).not.toContain("bindOperation");
      // A tenant whose quota is small (half of it: 0 slots) never has a slot held idle. The slot held
      // now goes to a run still going after a second, which is bound to it (its release survives a
      // crash) and frees it with its settlement; then each prompt reserves its own.
      const quotas = await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 1 }, token: adminToken() });
      expect(quotas.status).toBe(200);
      await runInDurableObject(setup.stub, (instance: SessionObject) => appendScriptSteps(instance.session(), [slowStep(60), { text: "three" }]));
      expect((await call(`${setup.sessionPath}/lanes/main/config`, { method: "PATCH", body: { model: { provider: "scripted", modelId: "script" } }, token: setup.key })).status).toBe(200);
      const beforeSlow = (await recorder.read()).length;
      await turn("slow");
      await until(async () => (await recorder.read()).slice(beforeSlow).includes("bindOperation"));
      await until(async () => (await env.TENANTS.getByName(setup.tenantId).openOperationCount()) === 0);
      await until(async () => (await recorder.read()).slice(beforeSlow).includes("operationsSettled"));
      const beforeSmall = (await recorder.read()).length;
      await turn("s3");
      expect((await recorder.read()).slice(beforeSmall)).toContain("reserveOperation");
    } finally {
      await recorder.stop();
      client.ws.close();
    }
  });
});

/** How many times the tenant's object was asked for a lease while `body` ran (its method wrapped, then restored). */
async function countAuthorizeLease(tenantId: string, body: () => Promise<void>): Promise<number> {
  let calls = 0;
  const stub = env.TENANTS.getByName(tenantId);
  const prototype = await runInDurableObject(stub, (instance: TenantObject) => Object.getPrototypeOf(instance) as TenantObject);
  const original = prototype.authorizeLease;
  prototype.authorizeLease = function counted(this: TenantObject, ...args: Parameters<TenantObject["authorizeLease"]>) {
    calls++;
    return original.apply(this, args);
  };
  try {
    await body();
  } finally {
    prototype.authorizeLease = original;
  }
  return calls;
}

/** Polls `done` (bounded, no timing asserted). */
async function until(done: () => Promise<boolean>): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt++) {
    if (await done()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the condition never held");
}
