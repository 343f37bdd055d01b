import { describe, expect, it } from "vitest";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { MAX_WATCH_CLIENT_MESSAGE_CHARS, WATCH_CLOSE, WATCH_MESSAGE_BURST } from "../../schema/watch.ts";
import { Rng, junk, nested, randomString } from "./fuzz-generators.ts";
import { call } from "./helpers.ts";
import { connect, expectSnapshot, isRunEnd, prompt, settled, watchSetup, type Client } from "./watch-helpers.ts";

// QUALITY R3 extended to the watch protocol: many sockets each send a generated sequence of valid,
// malformed, oversized, binary, over-acknowledging or rapid client messages over real sockets.
// Every close the server sends is one of its documented codes (never 1011, the code of a server
// fault), the one a sequence's first violation calls for; a sequence without a violation leaves
// its socket open. Meanwhile a watcher that acknowledges keeps receiving, and afterwards no REST
// route of the session answers 5xx. Reproduce a run with its seed.

const SEED = 0x5eed_7a7c;
const SOCKETS = 120;
const CONCURRENCY = 8;

type Message = { text: string | ArrayBuffer; violation?: { code: number; why: string } };

const DOCUMENTED: ReadonlySet<number> = new Set(Object.values(WATCH_CLOSE));
const RESNAPSHOT = JSON.stringify({ type: "resnapshot" });

/** One generated client message; acknowledgements are relative to what the socket received. */
function message(rng: Rng, received: number): Message {
  const policy = (why: string, text: string | ArrayBuffer): Message => ({ text, violation: { code: WATCH_CLOSE.policy, why } });
  switch (rng.int(12)) {
    case 0:
      return { text: RESNAPSHOT };
    case 1:
      return { text: JSON.stringify({ type: "ack", bytes: rng.int(received + 1) }) };
    case 2:
      // Far past anything the sequence's own resnapshots could make the server send meanwhile.
      return policy("over-acknowledged", JSON.stringify({ type: "ack", bytes: received * 100 + 1_000_000 + rng.int(1_000_000) }));
    case 3:
      return policy("ack of the wrong type", JSON.stringify({ type: "ack", bytes: rng.pick([-1, 1.5, "1", null, 2 ** 53, [], {}]) }));
    case 4:
      return policy("unknown or extra members", JSON.stringify(rng.pick([{ type: "subscribe" }, { type: "resnapshot", x: 1 }, { type: "ack" }, { bytes: 1 }, {}])));
    case 5:
      return policy("not JSON", rng.pick(["", "{", "resnapshot", "{\"type\":", randomString(rng, 1 + rng.int(40))]));
    case 6: {
      const value = junk(rng);
      const text = JSON.stringify(value) ?? "undefined";
      return policy(text.length > MAX_WATCH_CLIENT_MESSAGE_CHARS ? "oversized junk" : "junk", text);
    }
    case 7:
      return policy("oversized", "x".repeat(MAX_WATCH_CLIENT_MESSAGE_CHARS + 1 + rng.int(60_000)));
    case 8:
      return policy("deeply nested", JSON.stringify(nested(rng.pick([10, 100, 400]), rng.next() < 0.5 ? "array" : "object")));
    case 9:
      return { text: crypto.getRandomValues(new Uint8Array(rng.int(2048))).buffer, violation: { code: WATCH_CLOSE.binary, why: "binary" } };
    case 10:
      return { text: "ping" };
    default:
      return { text: JSON.stringify({ type: "ack", bytes: received }) };
  }
}

/** A sequence: mostly a few messages, sometimes a burst far past the per-socket rate. */
function sequence(rng: Rng, received: number): Message[] {
  if (rng.next() < 0.1) {
    const burst = Array.from({ length: WATCH_MESSAGE_BURST * 3 }, (): Message => ({ text: RESNAPSHOT }));
    return [...burst.slice(0, WATCH_MESSAGE_BURST), ...burst.slice(WATCH_MESSAGE_BURST).map((m) => ({ ...m, violation: { code: WATCH_CLOSE.policy, why: "rate" } }))];
  }
  return Array.from({ length: 1 + rng.int(8) }, () => message(rng, received));
}

async function fuzzSocket(rng: Rng, path: string, key: string): Promise<{ expected: number | "open"; got: number | "open"; label: string }> {
  const client: Client<LaneSnapshot> = await connect(path, key);
  await expectSnapshot(client);
  const messages = sequence(rng, client.receivedBytes());
  const first = messages.find((m) => m.violation);
  for (const m of messages) client.ws.send(m.text);
  const label = messages.map((m) => m.violation?.why ?? (typeof m.text === "string" ? m.text.slice(0, 30) : "binary")).join(" | ");
  if (first?.violation) {
    const close = await client.closed();
    return { expected: first.violation.code, got: close.code, label };
  }
  // No violation: a resnapshot after the sequence is answered, so every earlier message was handled.
  client.ws.send(RESNAPSHOT);
  const answered = await client.until((m) => m.type === "snapshot").then(
    () => true,
    () => false,
  );
  client.ws.close(1000);
  return { expected: "open", got: answered ? "open" : -1, label };
}

describe("watch protocol fuzz", { timeout: 180_000 }, () => {
  it(`${SOCKETS} sockets of generated client messages: documented close codes only, the object keeps serving (seed ${SEED.toString(16)})`, async () => {
    const rng = new Rng(SEED);
    const { key, stub, sessionPath } = await watchSetup("wfuzz");
    const healthy = await connect(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(healthy);

    const outcomes: Awaited<ReturnType<typeof fuzzSocket>>[] = [];
    for (let i = 0; i < SOCKETS; i += CONCURRENCY) {
      const batch = Array.from({ length: Math.min(CONCURRENCY, SOCKETS - i) }, (_, j) => new Rng(rng.int(2 ** 31) + i + j));
      outcomes.push(...(await Promise.all(batch.map((socketRng) => fuzzSocket(socketRng, `${sessionPath}/lanes/main/watch`, key)))));
    }
    const wrong = outcomes.filter((o) => o.got !== o.expected || (o.got !== "open" && !DOCUMENTED.has(o.got)));
    expect(wrong).toEqual([]);
    expect(outcomes.filter((o) => o.got === WATCH_CLOSE.internal)).toEqual([]);
    expect(outcomes.filter((o) => o.expected === "open").length).toBeGreaterThan(5);
    expect(new Set(outcomes.map((o) => o.got))).toEqual(new Set(["open", WATCH_CLOSE.policy, WATCH_CLOSE.binary]));

    // The object still serves its other socket and its REST routes.
    healthy.ack();
    const runId = await prompt(stub, "main", "after the fuzz");
    await healthy.until(isRunEnd(runId));
    await settled(stub, "main", runId);
    for (const route of ["", "/lanes", "/lanes/main", "/lanes/main/snapshot", "/branches", "/entries"]) {
      const response = await call(`${sessionPath}${route}`, { token: key });
      expect(response.status, route).toBe(200);
    }
    healthy.ws.close(1000);
  });
});
