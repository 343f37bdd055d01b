import type { LaneExecutionInfo, LaneSnapshot } from "../../schema/lane.ts";
import type { Rng } from "../api/fuzz-generators.ts";
import { sleep, type SoakClient } from "./cluster.ts";
import type { Ledger } from "./ledger.ts";
import { lanePath } from "./operations.ts";

// The soak's client for `ask_client`, a client tool (docs/tools.md "client tools"): the run waits
// until the client posts the call's result. One answerer per lane watches the lane as a client
// that survives kills does, from the documented state only: `GET …/lanes/{lane}` says when the
// current operation is at its tool step, and then the lane snapshot lists the waiting calls
// (`runningTools` with `executor: "client"`). Each call is answered after a seeded pause (so that
// kills land between the call and its answer, and during the post), with a text carrying a unique
// marker; a post cut off by a kill is sent again, and so is the same answer while the call still
// waits (a stored answer makes the repeat a 409 `ToolResultConflict`, which places nothing twice).
// The checker then finds each accepted answer in the transcript exactly once, as that call's result.

const POLL_MS = 1000;
const MAX_PAUSE_MS = 4000;

export class ClientToolAnswerer {
  private stopped = false;
  private loop: Promise<void> | undefined;
  /** Answers being posted right now (operation/call id), so that one call has one post in flight. */
  private readonly posting = new Set<string>();
  private readonly posts: Promise<void>[] = [];
  polls = 0;
  private readonly lanePath: string;

  /** Answers the client calls of `lane` of `sessionId`, after pauses drawn from `rng`. */
  constructor(
    private readonly lane: { sessionId: string; lane: string },
    private readonly client: SoakClient,
    private readonly ledger: Ledger,
    private readonly rng: Rng,
  ) {
    this.lanePath = lanePath(lane.sessionId, lane.lane);
  }

  start(): void {
    this.loop = this.watch();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await Promise.allSettled(this.posts);
  }

  private async watch(): Promise<void> {
    while (!this.stopped) {
      await this.answerWaitingCalls().catch(() => undefined);
      await sleep(POLL_MS);
    }
  }

  private async answerWaitingCalls(): Promise<void> {
    this.polls++;
    const info = await this.client.expect<LaneExecutionInfo>(200, "GET", this.lanePath);
    if (info.current?.at !== "tools") return;
    const { snapshot } = await this.client.expect<{ snapshot: LaneSnapshot }>(200, "GET", `${this.lanePath}/snapshot`);
    const operation = snapshot.operation;
    if (!operation) return;
    for (const row of operation.runningTools) {
      if (row.status !== "running" || row.executor !== "client") continue;
      const key = `${operation.id}/${row.toolCallId}`;
      const known = this.ledger.clientAnswers.get(key);
      if (this.posting.has(key) || known?.status === 202) continue;
      this.posting.add(key);
      this.posts.push(this.answer(operation.id, row.toolCallId, known === undefined).finally(() => this.posting.delete(key)));
    }
  }

  /** Posts the call's answer (the first time after a pause); records what the service said. */
  private async answer(operationId: string, toolCallId: string, first: boolean): Promise<void> {
    const key = `${operationId}/${toolCallId}`;
    const answer = this.ledger.clientAnswers.get(key) ?? { ...this.lane, operationId, toolCallId, marker: this.ledger.marker(`client-${this.lane.sessionId}-${this.lane.lane}`), status: 0 };
    this.ledger.clientAnswers.set(key, answer);
    if (first) await sleep(this.rng.int(MAX_PAUSE_MS));
    const reply = await this.client.send("POST", `${this.lanePath}/operations/${operationId}/tool-results/${toolCallId}`, {
      body: { content: [{ type: "text", text: `the client says ${answer.marker}` }] },
    });
    // A 409 ToolResultConflict after an answer the client did not see (a kill) means it was stored.
    const stored = reply.status === 202 || (reply.status === 409 && JSON.stringify(reply.body).includes('"ToolResultConflict"'));
    if (answer.status !== 202) answer.status = stored ? 202 : reply.status;
    this.ledger.count(`client tool answer: ${reply.status}`);
  }
}
