import type { Entry } from "../../schema/entries.ts";
import type { WatchReply } from "../../schema/watch.ts";
import type { Rng } from "../api/fuzz-generators.ts";
import { words } from "../e2e/client-helpers.ts";
import { sleep, type SoakClient } from "./cluster.ts";
import type { Ledger, MarkerKind } from "./ledger.ts";
import { awaitSettled, lanePath } from "./operations.ts";
import { socketCommand } from "./socket-commands.ts";

// One workload actor: it drives one lane of one session through the public API, over and over until
// told to stop. Between runs, sometimes a compaction, a navigation or a fork. Then a run (streamed
// text, a batch of tools: an http tool with `replay: "never"`, one with `replay: "safe"`, and some
// of the builtin `wait`, a client tool (answered by client-tools.ts) and two MCP tools, one
// `replay: "never"` and one `"safe"`; or a deferred answer), and while it answers a random mix of steers, follow-ups,
// nextRun items, prompts with `ifBusy: "steer" | "followUp"`, pending runs (`ifBusy: "enqueue"`),
// the same as commands on the lane socket, aborts of the run and cancellations of a pending run.
// Every input carries a unique marker; every 2xx answer goes into the ledger. Kills happen
// underneath: every request is retried with its Idempotency-Key (SoakClient), every socket command
// with its client id, so an actor never gives up on a request.

/**
 * The tools every soak session has (docs/tools.md): the http ones call the local fixture, `kb_*`
 * are the tools of the local MCP fixture (sessions.ts), `ask_client` is answered by the soak's client.
 */
export const SOAK_TOOLS = ["never_lookup", "safe_lookup", "wait", "ask_client", "kb_echo", "kb_picture"] as const;

type Accepted = { operationId: string; state?: "pending"; queued?: "steer" | "followUp"; entryId?: string };
type AbortAnswer = { operationId: string; newlyRequested: boolean; steer: unknown[]; followUp: unknown[] };
type Step = { text: string; chunkMs?: number } | { toolCalls: { name: string; arguments: Record<string, unknown> }[] } | { deferred: { pollAfterMs: number; ready: { text: string } } };

/** How long an actor waits for its own operations before it moves on (the final check waits again). */
const SETTLE_WAIT_MS = 60_000;

export class Actor {
  private commands = 0;
  /** Once the workload stops, the actor no longer waits for its operations: the checker does. */
  private stopping: () => boolean = () => false;

  constructor(
    readonly name: string,
    private readonly client: SoakClient,
    private readonly ledger: Ledger,
    private readonly rng: Rng,
    readonly sessionId: string,
    readonly lane: string,
  ) {}

  private get lanePath(): string {
    return lanePath(this.sessionId, this.lane);
  }

  async runUntil(stop: () => boolean): Promise<void> {
    this.stopping = stop;
    while (!stop()) await this.iteration();
  }

  private step(): Step {
    const roll = this.rng.next();
    if (roll < 0.4) {
      const some = (call: { name: string; arguments: Record<string, unknown> }) => (this.rng.next() < 0.4 ? [call] : []);
      return {
        toolCalls: [
          { name: "never_lookup", arguments: { question: `never ${this.rng.int(1000)}` } },
          { name: "safe_lookup", arguments: { question: `safe ${this.rng.int(1000)}` } },
          ...some({ name: "wait", arguments: { seconds: 1 } }),
          ...some({ name: "ask_client", arguments: { question: `client ${this.rng.int(1000)}` } }),
          ...some({ name: "kb_echo", arguments: { text: `mcp ${this.rng.int(1000)}` } }),
          ...some({ name: "kb_picture", arguments: {} }),
        ],
      };
    }
    if (roll < 0.48) return { deferred: { pollAfterMs: 1000, ready: { text: "the deferred answer" } } };
    return { text: words(10 + this.rng.int(30), `${this.name}w`), chunkMs: 20 + this.rng.int(40) };
  }

  /** Appends `count` steps to the session's script (shared by its lanes, taken in order). */
  private async appendSteps(count: number, step: () => Step = () => this.step()): Promise<void> {
    for (let index = 0; index < count; index++) await this.client.create(201, `/v1/sessions/${this.sessionId}/lists/scripted/steps`, step());
  }

  private async iteration(): Promise<void> {
    this.ledger.count("iterations");
    const between = this.rng.next();
    if (between < 0.1) await this.maintenance("compaction", {});
    else if (between < 0.18) await this.navigate();
    else if (between < 0.23) await this.fork();
    const actions = 1 + this.rng.int(4);
    // One step per provider request the run may make: the first, one after each input it may take,
    // one after a tool batch, and spares for retries after kills and for the schedule's runs (left
    // over steps are taken by later runs; a run that finds none fails `assistant_error`).
    await this.appendSteps(actions + 5);
    const opened: string[] = [];
    const run = await this.startRun("enqueue", "run");
    if (run) opened.push(run);
    for (let action = 0; action < actions; action++) {
      await sleep(this.rng.int(1500));
      const started = await this.randomAction(opened);
      if (started) opened.push(started);
    }
    const deadline = Date.now() + SETTLE_WAIT_MS;
    for (const operationId of opened) await awaitSettled(this.client, this.ledger, this.lanePath, operationId, deadline, this.stopping);
  }

  /** One input while the run answers; returns the id of an operation it started, if any. */
  private async randomAction(opened: readonly string[]): Promise<string | undefined> {
    const roll = this.rng.next();
    if (roll < 0.14) return void (await this.queue("steer"));
    if (roll < 0.26) return void (await this.queue("followUp"));
    if (roll < 0.32) return void (await this.queue("nextRun"));
    if (roll < 0.39) return this.startRun("steer", "ifBusy steer");
    if (roll < 0.45) return this.startRun("followUp", "ifBusy followUp");
    if (roll < 0.58) return this.startRun("enqueue", "pending run");
    if (roll < 0.66) return this.socketPrompt();
    if (roll < 0.74) return void (await this.socketQueue(this.rng.next() < 0.5 ? "steer" : "followUp"));
    if (roll < 0.8) return void (await this.socketAbort());
    // Mostly the iteration's first run (running, or pending behind an earlier one); sometimes the
    // newest operation, often a pending run, whose abort cancels it before it starts.
    const target = roll < 0.92 ? opened[0] : opened.at(-1);
    if (target) await this.abort(target, roll < 0.92 ? "abort first run" : "abort newest operation");
    return undefined;
  }

  private async queue(kind: "steer" | "followUp" | "nextRun"): Promise<void> {
    const marker = this.ledger.marker(this.name);
    const sentAt = Date.now();
    const answer = await this.client.create<{ entryId: string }>(201, `${this.lanePath}/queue`, { kind, message: `${kind} ${marker}` });
    this.ledger.enqueue({ sessionId: this.sessionId, lane: this.lane, marker, kind, entryId: answer.entryId, sentAt });
  }

  /** A prompt with `ifBusy`; on an idle lane every strategy starts a run. */
  private async startRun(ifBusy: "enqueue" | "steer" | "followUp", how: string): Promise<string | undefined> {
    const marker = this.ledger.marker(this.name);
    const sentAt = Date.now();
    const reply = await this.client.send<Accepted>("POST", `${this.lanePath}/operations`, {
      body: { kind: "prompt", prompt: `${how} ${marker}`, ifBusy },
      idempotencyKey: crypto.randomUUID(),
    });
    return this.accepted(how, marker, sentAt, reply.status, reply.body);
  }

  /** Records what a prompt's answer accepted (an operation, or a queued prompt); the run's id if one. */
  private accepted(how: string, marker: string, sentAt: number, status: number, body: unknown): string | undefined {
    if (status === 409 && errorCode(body) === "QueueFull") {
      // 20 pending runs already: refused, nothing accepted.
      this.ledger.count(`refused ${how}: ${errorCode(body)}`);
      return undefined;
    }
    if (status !== 202) throw new Error(`${how} on ${this.lanePath}: ${status} ${JSON.stringify(body)}`);
    const accepted = body as Accepted;
    if (accepted.queued) {
      const kind: MarkerKind = accepted.queued === "steer" ? "ifBusy:steer" : "ifBusy:followUp";
      this.ledger.enqueue({ sessionId: this.sessionId, lane: this.lane, marker, kind, sentAt, ...(accepted.entryId !== undefined && { entryId: accepted.entryId }) });
      return undefined;
    }
    this.ledger.accept({ sessionId: this.sessionId, lane: this.lane, operationId: accepted.operationId, marker, how: accepted.state === "pending" ? `${how} (pending)` : how });
    return accepted.operationId;
  }

  /**
   * Aborts a running operation (its drained input is handed back) or cancels a pending run. Sent
   * with an Idempotency-Key, kept across retries: a retry after a kill swallowed the answer gets
   * the same answer, with the input the abort handed back.
   */
  private async abort(operationId: string, how: string): Promise<void> {
    const reply = await this.client.send<AbortAnswer>("POST", `${this.lanePath}/operations/${operationId}/abort`, { idempotencyKey: crypto.randomUUID() });
    this.handBack(how, reply.status, reply.body);
  }

  private handBack(how: string, status: number, body: unknown): void {
    // `newlyRequested: false`: an abort was already requested (perhaps by this very request, whose
    // first answer a kill swallowed); what that one drained is not in this answer.
    const answer = body as AbortAnswer;
    if (status === 200 && answer.newlyRequested) this.ledger.handBack(answer.operationId, [...answer.steer, ...answer.followUp]);
    // Otherwise already settled (409 stale, 422 nothing running): nothing to abort.
    this.ledger.count(`${how}: ${status} ${errorCode(body)}`);
  }

  private commandId(): string {
    this.commands++;
    return `${this.name}.${this.commands}`;
  }

  private command(frame: Parameters<typeof socketCommand>[3]): Promise<WatchReply> {
    return socketCommand(this.client, this.sessionId, this.lane, frame);
  }

  private async socketPrompt(): Promise<string | undefined> {
    const marker = this.ledger.marker(this.name);
    const sentAt = Date.now();
    const reply = await this.command({ type: "prompt", id: this.commandId(), prompt: `socket prompt ${marker}`, ifBusy: "enqueue" });
    return this.accepted("socket prompt", marker, sentAt, reply.status, reply.body);
  }

  private async socketQueue(kind: "steer" | "followUp"): Promise<void> {
    const marker = this.ledger.marker(this.name);
    const sentAt = Date.now();
    const reply = await this.command({ type: "queue", id: this.commandId(), kind, message: `socket ${kind} ${marker}` });
    if (reply.status !== 201) throw new Error(`socket queue on ${this.lanePath}: ${reply.status} ${JSON.stringify(reply.body)}`);
    this.ledger.enqueue({ sessionId: this.sessionId, lane: this.lane, marker, kind: "socket:queue", entryId: (reply.body as { entryId: string }).entryId, sentAt });
  }

  private async socketAbort(): Promise<void> {
    const reply = await this.command({ type: "abort", id: this.commandId() });
    this.handBack("socket abort", reply.status, reply.body);
  }

  /** A compaction or navigation on the idle lane (409 LaneBusy when a run is still open: counted, not an error). */
  private async maintenance(kind: "compaction" | "navigation", request: Record<string, unknown>): Promise<void> {
    // The summary is asked of the model: a text step for it.
    await this.appendSteps(1, () => ({ text: `summary by ${this.name}` }));
    const reply = await this.client.send<Accepted>("POST", `${this.lanePath}/operations`, { body: { kind, ...request }, idempotencyKey: crypto.randomUUID() });
    if (reply.status !== 202) {
      this.ledger.count(`${kind}: ${reply.status} ${errorCode(reply.body)}`);
      return;
    }
    this.ledger.accept({ sessionId: this.sessionId, lane: this.lane, operationId: reply.body.operationId, how: kind });
    await awaitSettled(this.client, this.ledger, this.lanePath, reply.body.operationId, Date.now() + SETTLE_WAIT_MS, this.stopping);
  }

  /** Navigates to a random user message of the lane's branch, with a summary of what is left half the time. */
  private async navigate(): Promise<void> {
    const page = await this.client.expect<{ items: Entry[] }>(200, "GET", `/v1/sessions/${this.sessionId}/branches/${this.lane}/entries?order=desc&limit=30`);
    const users = page.items.filter((entry) => entry.type === "message" && entry.message.role === "user");
    if (users.length === 0) return;
    const target = users[this.rng.int(users.length)];
    await this.maintenance("navigation", { targetId: target?.id, summarize: this.rng.next() < 0.5 });
  }

  private async fork(): Promise<void> {
    const id = `${this.sessionId}-fork-${this.name}-${this.commandId().replace(/\./g, "-")}`;
    const reply = await this.client.send<{ id: string }>("POST", `/v1/sessions/${this.sessionId}/fork`, { body: { scope: "branch", branch: this.lane, id }, idempotencyKey: crypto.randomUUID() });
    this.ledger.count(`fork: ${reply.status} ${errorCode(reply.body)}`);
    if (reply.status === 201) this.ledger.forks.push(reply.body.id);
  }
}

/** The error code of an answer (empty for a success), for the summary's counts. */
function errorCode(body: unknown): string {
  return typeof body === "object" && body !== null && "error" in body && typeof body.error === "object" && body.error !== null && "code" in body.error ? String(body.error.code) : "";
}
