import * as v from "valibot";
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_WATCH_CLIENT_MESSAGE_CHARS, MAX_WATCH_COMMAND_BYTES, WATCH_CLOSE, WatchClientMessageSchema, WatchCommandIdSchema, WatchCommandSchema } from "../../schema/watch.ts";
import type { OpenApiDocument } from "../../worker/openapi/document.ts";
import { mint } from "./browser-token-helpers.ts";
import { Rng, bodyMutations, junk, nested } from "./fuzz-generators.ts";
import { call } from "./helpers.ts";
import { makeResources, readBack, type Resources } from "./route-fixtures.ts";
import { connect, expectSnapshot, type Client, type Received } from "./watch-helpers.ts";

// QUALITY R3 over both socket protocols of the service, the lane watch socket
// (`…/lanes/{lane}/watch`) and the session watch socket (`…/sessions/{sid}/watch`), for the frames
// test/api/watch-fuzz.test.ts does not generate: the command frames (`prompt`, `queue`, `abort`
// with a client id, docs/api-watch.md "Commands on the socket"). Generated mutations of valid
// commands, sent over real sockets, each get their documented answer: a malformed command a
// `reply` 400 ValidationFailed (the socket stays open), a command on the session socket 400, a
// command on a watch-only browser token's socket 403 TokenScope, a frame that is no command and
// no client message a 1008 close, an oversized frame 1008, a binary one 1003; never 1011 (a
// server fault). Nothing is written (the tenant reads back the same through every GET route),
// and afterwards a valid command on a new socket still runs. Reproduce a run with its seed.

const SEED = 0x5eed_c0de;
const SOCKETS = 60;
const CONCURRENCY = 8;

type Outcome = { reply: number; code: string } | { close: number } | "open";
interface Frame { text: string | ArrayBuffer; label: string; expected: Outcome }
type Target = "lane" | "session" | "watch-token";

let doc: OpenApiDocument;
let r: Resources;
let watchToken: string;

beforeAll(async () => {
  doc = await (await call("/openapi.json")).json<OpenApiDocument>();
  r = await makeResources("sockfuzz");
  watchToken = (await mint(r.sid, r.key, { scopes: ["watch"], lanes: ["main"] })).token;
}, 60_000);

const EXAMPLES: readonly Record<string, unknown>[] = [
  { type: "prompt", id: "c1", prompt: "hello", ifBusy: "enqueue" },
  { type: "prompt", id: "c2", prompt: [{ role: "user", content: "hi", timestamp: 1 }], deferred: "auto" },
  { type: "queue", id: "c3", kind: "followUp", message: "then" },
  { type: "abort", id: "c4" },
];

/** A frame is a command when its `type` is one of the three and its `id` a command id (docs/api-watch.md). */
function commandId(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || !("type" in value) || !("id" in value)) return undefined;
  const { type, id } = value;
  return (type === "prompt" || type === "queue" || type === "abort") && v.is(WatchCommandIdSchema, id) ? id : undefined;
}

/** What the server must answer `text` with on a socket of `target`; undefined for a valid command (never sent: it would write). */
function expectedOf(text: string, target: Target): Outcome | undefined {
  if (new TextEncoder().encode(text).byteLength > MAX_WATCH_COMMAND_BYTES) return { close: WATCH_CLOSE.policy };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { close: WATCH_CLOSE.policy };
  }
  if (commandId(parsed) !== undefined) {
    if (target === "watch-token") return { reply: 403, code: "TokenScope" };
    if (target === "session") return { reply: 400, code: "ValidationFailed" };
    return v.is(WatchCommandSchema, parsed) ? undefined : { reply: 400, code: "ValidationFailed" };
  }
  if (text.length > MAX_WATCH_CLIENT_MESSAGE_CHARS || !v.is(WatchClientMessageSchema, parsed)) return { close: WATCH_CLOSE.policy };
  return "open";
}

/** Every candidate frame: each command example's mutations, junk commands, and the plain client messages. */
function candidates(rng: Rng): string[] {
  const out: string[] = [];
  for (const example of EXAMPLES) {
    out.push(JSON.stringify(example));
    for (const mutation of bodyMutations(example)) out.push(JSON.stringify(mutation.body) ?? "null");
    for (let i = 0; i < 30; i++) out.push(JSON.stringify({ ...example, [rng.pick(Object.keys(example))]: junk(rng) }));
    out.push(JSON.stringify({ ...example, prompt: "x".repeat(MAX_WATCH_COMMAND_BYTES) }));
    out.push(JSON.stringify({ ...example, images: [{ type: "image", data: "x".repeat(200_000), mimeType: "image/png" }] }));
    out.push(JSON.stringify({ ...example, message: nested(300, "object") }));
  }
  out.push(JSON.stringify({ type: "resnapshot" }), JSON.stringify({ type: "ack", bytes: 0 }), "{", "[]", JSON.stringify({ type: "prompt" }));
  return out;
}

/** A socket's sequence: commands answered with a reply and frames that keep it open, then (every other socket) one frame that closes it. */
function sequence(rng: Rng, pool: readonly string[], target: Target): Frame[] {
  const framed = pool.flatMap((text): Frame[] => {
    const expected = expectedOf(text, target);
    return expected === undefined ? [] : [{ text, label: text.slice(0, 60), expected }];
  });
  const closes = (frame: Frame): boolean => typeof frame.expected === "object" && "close" in frame.expected;
  const keeping = framed.filter((frame) => !closes(frame));
  const closing = framed.filter(closes);
  const frames = Array.from({ length: 1 + rng.int(20) }, () => rng.pick(keeping));
  if (rng.next() < 0.1) frames.push({ text: new Uint8Array(rng.int(512)).buffer, label: "binary", expected: { close: WATCH_CLOSE.binary } });
  else if (rng.next() < 0.5) frames.push(rng.pick(closing));
  return frames;
}

/** A command's `reply` frame (the socket helper's inbox holds every JSON frame it received). */
const ReplySchema = v.object({ type: v.literal("reply"), id: v.string(), status: v.number(), body: v.looseObject({ error: v.optional(v.looseObject({ code: v.string() })) }) });
const isReply = (message: Received<unknown>): boolean => v.is(ReplySchema, message);

const sent = new Map<string, number>();
const outcomeName = (outcome: Outcome): string => (typeof outcome === "string" ? outcome : "reply" in outcome ? `${outcome.reply} ${outcome.code}` : `close ${outcome.close}`);

/** Sends one sequence on a new socket; the problems found (none when every answer was the documented one). */
async function fuzzSocket(rng: Rng, pool: readonly string[], target: Target): Promise<string[]> {
  const path = target === "session" ? `/v1/sessions/${r.sid}/watch` : `/v1/sessions/${r.sid}/lanes/main/watch`;
  const client: Client<unknown> = await connect<unknown>(path, target === "watch-token" ? { protocols: [`bearer.${watchToken}`] } : r.key);
  await expectSnapshot(client);
  const frames = sequence(rng, pool, target);
  for (const frame of frames) sent.set(`${target} ${outcomeName(frame.expected)}`, (sent.get(`${target} ${outcomeName(frame.expected)}`) ?? 0) + 1);
  for (const frame of frames) client.ws.send(frame.text);
  const problems: string[] = [];
  const replies = frames.filter((frame) => typeof frame.expected === "object" && "reply" in frame.expected);
  for (const frame of replies) {
    const expected = frame.expected as { reply: number; code: string };
    const read: unknown[] = await client.until(isReply).catch((error: unknown) => [String(error)]);
    const reply = v.safeParse(ReplySchema, read.at(-1));
    if (!reply.success || reply.output.status !== expected.reply || reply.output.body.error?.code !== expected.code) problems.push(`${target} [${frame.label}]: expected ${expected.reply} ${expected.code}, got ${JSON.stringify(read.at(-1)).slice(0, 200)}`);
  }
  const last = frames.at(-1)?.expected;
  if (last && typeof last === "object" && "close" in last) {
    const { code } = await client.closed();
    if (code !== last.close) problems.push(`${target} [${frames.at(-1)?.label}]: closed ${code}, expected ${last.close}`);
    return problems;
  }
  // Still open: a resnapshot is answered, so every frame before it was handled without closing it.
  client.send(JSON.stringify({ type: "resnapshot" }));
  await client.until((message) => message.type === "snapshot").catch((error: unknown) => problems.push(`${target}: no snapshot after the sequence (${String(error)})`));
  client.ws.close(1000);
  return problems;
}

describe("socket protocol fuzz: command frames on lane and session sockets (QUALITY R3)", () => {
  it(`${SOCKETS} sockets of generated command frames: documented replies and close codes, nothing written (seed ${SEED.toString(16)})`, { timeout: 120_000 }, async () => {
    const rng = new Rng(SEED);
    const pool = candidates(rng);
    const before = await readBack(doc, r);
    const targets: Target[] = ["lane", "session", "watch-token"];
    const problems: string[] = [];
    for (let i = 0; i < SOCKETS; i += CONCURRENCY) {
      const batch = Array.from({ length: Math.min(CONCURRENCY, SOCKETS - i) }, (_, j) => ({ rng: new Rng(rng.int(2 ** 31) + i + j), target: targets[(i + j) % targets.length] ?? "lane" }));
      for (const found of await Promise.all(batch.map(({ rng: socketRng, target }) => fuzzSocket(socketRng, pool, target)))) problems.push(...found);
    }
    console.log(`socket fuzz sent ${[...sent.values()].reduce((sum, n) => sum + n, 0)} frames on ${SOCKETS} sockets: ${JSON.stringify(Object.fromEntries(sent))}`);
    expect(problems).toEqual([]);
    expect(await readBack(doc, r)).toEqual(before);

    // The object still serves: a valid command on a new socket runs and is answered 202.
    const client = await connect<unknown>(`/v1/sessions/${r.sid}/lanes/main/watch`, r.key);
    await expectSnapshot(client);
    client.send(JSON.stringify({ type: "prompt", id: "after-fuzz", prompt: "still there?" }));
    const reply = (await client.until(isReply)).at(-1);
    expect(reply).toMatchObject({ type: "reply", id: "after-fuzz", status: 202 });
    client.ws.close(1000);
  });
});
