import { randomUUID } from "node:crypto";
import type { Rng } from "../api/fuzz-generators.ts";
import type { Reply } from "../e2e/client-helpers.ts";
import { startDevServer, type DevServer } from "../e2e/dev-server.ts";

// The server under chaos: `npm start` on one persist directory, SIGKILLed (whole process group)
// and started again on the same directory. Each start takes a new port, so clients read the
// current base URL on every attempt, and retry across the outage with the same Idempotency-Key,
// as a real client behind a load balancer would.

const RETRY_PAUSE_MS = 300;
/**
 * How long one logical request keeps retrying across outages before it gives up, counted from
 * when it was sent or, while the kills go on, from the last kill (see retryDeadline).
 */
const RETRY_WINDOW_MS = 180_000;
/** A request never waits longer than this for an answer (long-polls ask for at most 20 s). */
const ATTEMPT_TIMEOUT_MS = 60_000;
/** Starts of `npm start` before a taken port fails the run. */
const START_ATTEMPTS = 5;

export class Cluster {
  private server: DevServer | undefined;
  /** The tail of each killed server's output, so that a violation can be traced to the process that caused it. */
  private history = "";
  kills = 0;
  /** Server errors (5xx) answered to the workload: each is a violation of R6 (listed in the summary). */
  readonly serverErrors: string[] = [];
  /** When the kills ended (0 before they began: requests before the chaos get the plain window). */
  private chaosEndedAt: number | undefined = 0;
  /** Starts tried again because their port was taken meanwhile (see start). */
  portRetries = 0;
  /** Answers 409 IdempotencyInProgress the workload waited out (a repeat while the first attempt ran). */
  inProgressRetries = 0;

  constructor(readonly persistDir: string) {}

  /**
   * Starts `npm start` on a free port. The port is found free and then handed to wrangler, so on a
   * busy machine another process may take it (or the other port wrangler binds) in between: such
   * a start is tried again on another port, as an operator would restart it.
   */
  async start(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        this.server = await startDevServer({ persistDir: this.persistDir, timeoutMs: 120_000 });
        return;
      } catch (error) {
        const taken = error instanceof Error && error.message.includes("Address already in use");
        if (!taken || attempt >= START_ATTEMPTS) throw error;
        this.portRetries++;
      }
    }
  }

  get baseUrl(): string {
    if (!this.server) throw new Error("the server is not started");
    return this.server.baseUrl;
  }

  /** What the servers printed: the tails of the killed ones, then the current one's. */
  output(): string {
    return `${this.history}${this.server?.output() ?? ""}`;
  }

  /** SIGKILLs the process group and starts it again on the same persist directory. */
  async killAndRestart(): Promise<void> {
    const server = this.server;
    if (!server) throw new Error("the server is not started");
    await server.kill();
    this.kills++;
    this.history += `--- killed (kill ${this.kills}) ---\n${server.output().slice(-3000)}\n`;
    await this.start();
  }

  /**
   * When a request sent at `sentAt` stops retrying: `windowMs` after it was sent, and never before
   * `windowMs` after the last kill. While the kills go on the server may be up only a few seconds
   * at a time (a restart takes far longer than the gap on a busy machine), so a patient client
   * outlasts them rather than a fixed time.
   */
  retryDeadline(sentAt: number, windowMs: number): number {
    return Math.max(sentAt, this.chaosEndedAt ?? Number.POSITIVE_INFINITY) + windowMs;
  }

  /** Kills `kills` times, each after a pause drawn from [minGapMs, maxGapMs] once the server is up. */
  async chaos(rng: Rng, kills: number, minGapMs: number, maxGapMs: number, log: (line: string) => void): Promise<void> {
    this.chaosEndedAt = undefined;
    try {
      await this.killTimes(rng, kills, minGapMs, maxGapMs, log);
    } finally {
      this.chaosEndedAt = Date.now();
    }
  }

  private async killTimes(rng: Rng, kills: number, minGapMs: number, maxGapMs: number, log: (line: string) => void): Promise<void> {
    for (let kill = 1; kill <= kills; kill++) {
      const gap = minGapMs + rng.int(maxGapMs - minGapMs + 1);
      await sleep(gap);
      const started = Date.now();
      await this.killAndRestart();
      log(`kill ${kill}/${kills} after ${gap} ms; back up in ${Date.now() - started} ms`);
    }
  }

  async stop(): Promise<void> {
    await this.server?.stop();
  }

  /** A client for one bearer token whose requests survive the kills. */
  client(token: string): SoakClient {
    return new SoakClient(this, token);
  }
}

export interface SendOptions {
  body?: unknown;
  /** Sent as `Idempotency-Key`; the same on every retry of this request. */
  idempotencyKey?: string;
  headers?: Record<string, string>;
}

export interface TextReply {
  status: number;
  headers: Headers;
  text: string;
}

/** An HTTP client that retries a request across outages (connection errors, 5xx) with the same key. */
export class SoakClient {
  constructor(
    private readonly cluster: Cluster,
    readonly token: string,
  ) {}

  get baseUrl(): string {
    return this.cluster.baseUrl;
  }

  /** When a request sent at `sentAt` stops retrying (Cluster.retryDeadline). */
  retryDeadline(sentAt: number, windowMs: number): number {
    return this.cluster.retryDeadline(sentAt, windowMs);
  }

  /** Counts a 409 IdempotencyInProgress waited out (REST or socket), for the summary. */
  noteInProgress(): void {
    this.cluster.inProgressRetries++;
  }

  /** One logical request: retried until it gets an answer below 500 (bounded); returns that answer. */
  async send<T>(method: string, path: string, options: SendOptions = {}): Promise<Reply<T>> {
    const reply = await this.sendText(method, path, options);
    const body: T = reply.text === "" ? null : JSON.parse(reply.text);
    return { status: reply.status, headers: reply.headers, body };
  }

  /** `send` keeping the body as text (an NDJSON export). */
  async sendText(method: string, path: string, options: SendOptions = {}): Promise<TextReply> {
    const sentAt = Date.now();
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, ...options.headers };
    if (options.body !== undefined) headers["content-type"] = "application/json";
    if (options.idempotencyKey !== undefined) headers["idempotency-key"] = options.idempotencyKey;
    let lastProblem = "";
    while (Date.now() < this.retryDeadline(sentAt, RETRY_WINDOW_MS)) {
      try {
        const response = await fetch(`${this.cluster.baseUrl}${path}`, {
          method,
          headers,
          signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
          ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
        });
        const text = await response.text();
        if (response.status === 409 && text.includes('"IdempotencyInProgress"')) {
          // The first attempt with this key is still running (or was cut off by a kill and its
          // reservation not yet released): as docs/api-tenants.md says, ask again after Retry-After.
          // A key that stays in progress past the retry window fails the request (a violation).
          this.noteInProgress();
          lastProblem = `409 ${text.slice(0, 300)}`;
          await sleep(Math.min(10, Number(response.headers.get("retry-after") ?? 1) || 1) * 1000);
          continue;
        }
        if (response.status < 500) return { status: response.status, headers: response.headers, text };
        lastProblem = `${response.status} ${text.slice(0, 300)}`;
        this.cluster.serverErrors.push(`${method} ${path}: ${lastProblem}`);
      } catch (error) {
        // The server died under the request, or is still starting: the same request again.
        lastProblem = error instanceof Error ? error.message : String(error);
      }
      await sleep(RETRY_PAUSE_MS);
    }
    throw new Error(`${method} ${path}: no answer within ${RETRY_WINDOW_MS} ms after the last kill (last: ${lastProblem})`);
  }

  /** `send` that must answer one of `statuses`. */
  async expect<T>(statuses: number | readonly number[], method: string, path: string, options: SendOptions = {}): Promise<T> {
    const wanted = typeof statuses === "number" ? [statuses] : statuses;
    const reply = await this.send<T>(method, path, options);
    if (!wanted.includes(reply.status)) throw new Error(`${method} ${path}: expected ${wanted.join("|")}, got ${reply.status} ${JSON.stringify(reply.body).slice(0, 500)}`);
    return reply.body;
  }

  /** A creating POST with a fresh Idempotency-Key kept across its retries. */
  create<T>(statuses: number | readonly number[], path: string, body: unknown): Promise<T> {
    return this.expect<T>(statuses, "POST", path, { body, idempotencyKey: randomUUID() });
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
