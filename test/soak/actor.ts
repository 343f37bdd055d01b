import type { Rng } from "../api/fuzz-generators.ts";
import { words, type ScriptStep } from "../e2e/client-helpers.ts";
import { sleep, type SoakClient } from "./cluster.ts";
import type { Ledger, MarkerKind } from "./ledger.ts";

// One workload actor: it drives one lane of one session through the public API, over and over until
// told to stop: a run (streamed text, or a batch of tools: an http tool with `replay: "never"`, one
// with `replay: "safe"`, the builtin `wait`), and while it answers, a random mix of steers,
// follow-ups, nextRun items, prompts with `ifBusy: "steer" | "followUp"`, pending runs
// (`ifBusy: "enqueue"`), aborts of the run and cancellations of a pending run. Every input carries a
// unique marker; every 2xx answer goes into the ledger. Kills happen underneath: every request is
// retried with its Idempotency-Key (SoakClient), so an actor never gives up on a request.

/** The tools every soak session has (docs/tools.md); the http ones call the local fixture. */
export const SOAK_TOOLS = ["never_lookup", "safe_lookup", "wait"] as const;

type Accepted = { operationId: string; state?: "pending"; queued?: "steer" | "followUp"; entryId?: string };
type AbortAnswer = { steer: unknown[]; followUp: unknown[] };
type OperationView = { state: "settled" | "active" | "pending" };

/** How long an actor waits for its own operations before it moves on (the final check waits again). */
const SETTLE_WAIT_MS = 60_000;

export class Actor {
  constructor(
    readonly name: string,
    private readonly client: SoakClient,
    private readonly ledger: Ledger,
    private readonly rng: Rng,
    readonly sessionId: string,
    readonly lane: string,
  ) {}

  private get lanePath(): string {
    return `/v1/sessions/${this.sessionId}/lanes/${this.lane}`;
  }

  async runUntil(stop: () => boolean): Promise<void> {
    while (!stop()) await this.iteration();
  }

  private step(): ScriptStep | { toolCalls: { name: string; arguments: Record<string, unknown> }[] } {
    if (this.rng.next() < 0.45) {
      return {
        toolCalls: [
          { name: "never_lookup", arguments: { question: `never ${this.rng.int(1000)}` } },
          { name: "safe_lookup", arguments: { question: `safe ${this.rng.int(1000)}` } },
          ...(this.rng.next() < 0.5 ? [{ name: "wait", arguments: { seconds: 1 } }] : []),
        ],
      };
    }
    return { text: words(10 + this.rng.int(30), `${this.name}w`), chunkMs: 20 + this.rng.int(40) };
  }

  /** Appends `count` steps to the session's script (shared by its lanes, taken in order). */
  private async appendSteps(count: number): Promise<void> {
    for (let index = 0; index < count; index++) {
      await this.client.create(201, `/v1/sessions/${this.sessionId}/lists/scripted/steps`, this.step());
    }
    this.ledger.count("iterations");
  }

  private async iteration(): Promise<void> {
    const actions = 1 + this.rng.int(4);
    // One step per provider request the run may make: the first, one after each input it may take,
    // and spares for retries after kills (left over steps are taken by later runs).
    await this.appendSteps(actions + 3);
    const opened: string[] = [];
    const run = await this.startRun("enqueue", "run");
    if (run) opened.push(run);
    for (let action = 0; action < actions; action++) {
      await sleep(this.rng.int(1500));
      const started = await this.randomAction(opened);
      if (started) opened.push(started);
    }
    await this.settle(opened);
  }

  /** One input while the run answers; returns the id of an operation it started, if any. */
  private async randomAction(opened: readonly string[]): Promise<string | undefined> {
    const roll = this.rng.next();
    if (roll < 0.2) return void (await this.queue("steer"));
    if (roll < 0.38) return void (await this.queue("followUp"));
    if (roll < 0.46) return void (await this.queue("nextRun"));
    if (roll < 0.56) return this.startRun("steer", "ifBusy steer");
    if (roll < 0.64) return this.startRun("followUp", "ifBusy followUp");
    if (roll < 0.82) return this.startRun("enqueue", "pending run");
    // Mostly the iteration's first run (running, or pending behind an earlier one); sometimes the
    // newest operation, often a pending run, whose abort cancels it before it starts.
    const target = roll < 0.92 ? opened[0] : opened.at(-1);
    if (target) await this.abort(target, roll < 0.92 ? "abort first run" : "abort newest operation");
    return undefined;
  }

  private async queue(kind: "steer" | "followUp" | "nextRun"): Promise<void> {
    const marker = this.ledger.marker(this.name);
    const answer = await this.client.create<{ entryId: string }>(201, `${this.lanePath}/queue`, { kind, message: `${kind} ${marker}` });
    this.ledger.enqueue({ sessionId: this.sessionId, lane: this.lane, marker, kind, entryId: answer.entryId });
  }

  /** A prompt with `ifBusy`; on an idle lane every strategy starts a run. */
  private async startRun(ifBusy: "enqueue" | "steer" | "followUp", how: string): Promise<string | undefined> {
    const marker = this.ledger.marker(this.name);
    const reply = await this.client.send<Accepted>("POST", `${this.lanePath}/operations`, {
      body: { kind: "prompt", prompt: `${how} ${marker}`, ifBusy },
      idempotencyKey: crypto.randomUUID(),
    });
    if (reply.status === 409) {
      // QueueFull (20 pending runs): refused, nothing accepted.
      this.ledger.count(`refused ${how}: ${JSON.stringify(reply.body).slice(0, 80)}`);
      return undefined;
    }
    if (reply.status !== 202) throw new Error(`POST ${this.lanePath}/operations: ${reply.status} ${JSON.stringify(reply.body)}`);
    const accepted = reply.body;
    if (accepted.queued) {
      const kind: MarkerKind = accepted.queued === "steer" ? "ifBusy:steer" : "ifBusy:followUp";
      this.ledger.enqueue({ sessionId: this.sessionId, lane: this.lane, marker, kind, ...(accepted.entryId !== undefined && { entryId: accepted.entryId }) });
      return undefined;
    }
    this.ledger.accept({ sessionId: this.sessionId, lane: this.lane, operationId: accepted.operationId, marker, how: accepted.state === "pending" ? "pending run" : "run" });
    return accepted.operationId;
  }

  /** Aborts a running operation (its drained input is handed back) or cancels a pending run. */
  private async abort(operationId: string, how: string): Promise<void> {
    const reply = await this.client.send<AbortAnswer>("POST", `${this.lanePath}/operations/${operationId}/abort`);
    if (reply.status === 200) {
      this.ledger.handBack([...reply.body.steer, ...reply.body.followUp]);
      this.ledger.count(`${how}: accepted`);
    } else {
      // Already settled (409 stale): nothing to abort.
      this.ledger.count(`${how}: ${reply.status}`);
    }
  }

  /** Long-polls each operation until it settles, bounded; the final check waits again for stragglers. */
  private async settle(operationIds: readonly string[]): Promise<void> {
    const deadline = Date.now() + SETTLE_WAIT_MS;
    for (const operationId of operationIds) {
      while (Date.now() < deadline) {
        const view = await this.client.expect<OperationView>(200, "GET", `${this.lanePath}/operations/${operationId}?wait=10`);
        if (view.state === "settled") break;
        // A pending run answers at once (no long-poll): a short pause before asking again.
        if (view.state === "pending") await sleep(500);
      }
    }
  }
}
