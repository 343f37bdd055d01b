import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Rng } from "../api/fuzz-generators.ts";
import { Api } from "../e2e/client-helpers.ts";
import type { RecordedMcpRequest } from "../mcp-recorded-request.ts";
import { startMcpTestServer, type McpTestServer } from "../node/mcp-test-server.ts";
import { startToolWebhookServer, type ReceivedCall, type ToolWebhookServer } from "../node/tool-webhook-server.ts";
import { Actor } from "./actor.ts";
import { ClientToolAnswerer } from "./client-tools.ts";
import { Cluster, sleep } from "./cluster.ts";
import { startFlakyReceiver, type FlakyReceiver } from "./flaky-receiver.ts";
import { InvariantChecker, type SoakSession } from "./invariants.ts";
import { LaneFollower } from "./lane-follower.ts";
import { Ledger } from "./ledger.ts";
import { soakOptions } from "./options.ts";
import { collectScheduledRuns, createSoakSession, createSoakTenant, LANES, topUpScripts } from "./sessions.ts";
import { printSummary } from "./summary.ts";
import { checkWebhooks } from "./webhooks.ts";

// `npm run soak` (docs/reliability.md "Chaos under load", QUALITY R6 and R9): `npm start` under a
// mixed workload while the whole server process group is SIGKILLed at random moments and started
// again on the same persist directory; afterwards every invariant is checked through the public
// API. The workload is in actor.ts, the checks in invariants.ts and webhooks.ts. Options (env, or
// flags of test/soak/soak.mjs): SOAK_SEED, SOAK_KILLS, SOAK_DURATION, SOAK_CONCURRENCY,
// SOAK_MIN_GAP_MS, SOAK_MAX_GAP_MS, SOAK_SHORT=1.

const log = (line: string) => console.log(`[soak] ${line}`);

describe("chaos under load", () => {
  const options = soakOptions();
  const persistDir = mkdtempSync(join(tmpdir(), "das-soak-"));
  const cluster = new Cluster(persistDir);
  let fixture: ToolWebhookServer | undefined;
  let mcp: McpTestServer | undefined;
  let receiver: FlakyReceiver | undefined;
  let keepState = false;
  afterAll(async () => {
    await cluster.stop();
    await fixture?.close();
    await mcp?.close();
    await receiver?.close();
    // After a violation the local state stays, to be read with `npm start -- --persist-to <dir>`.
    if (keepState) console.error(`[soak] the persist directory is kept for debugging: ${persistDir}`);
    else rmSync(persistDir, { recursive: true, force: true });
  });

  it("settles every accepted operation once and loses or doubles nothing across the kills", async () => {
    log(`seed ${options.seed} (replay with SOAK_SEED=${options.seed}); ${JSON.stringify(options)}`);
    const rng = new Rng(options.seed);
    fixture = await startToolWebhookServer();
    const fixtureUrl = fixture.url;
    mcp = await startMcpTestServer();
    const mcpUrl = mcp.url;
    const flaky = await startFlakyReceiver(new Rng(rng.int(2 ** 31)));
    receiver = flaky;
    await cluster.start();
    const { key } = await createSoakTenant(cluster.baseUrl, flaky.url);
    const api = new Api(cluster.baseUrl, key);
    const sessions: SoakSession[] = [];
    for (let index = 0; index < Math.ceil(options.concurrency / LANES.length); index++) sessions.push(await createSoakSession(api, { toolUrl: fixtureUrl, mcpUrl }, `soak-${index}`, index % 2 === 1));

    const client = cluster.client(key);
    const ledger = new Ledger();
    const followers = sessions.flatMap((session) => session.lanes.map((lane) => new LaneFollower(client, ledger, session.id, lane)));
    for (const follower of followers) follower.start();
    const answerers = sessions.flatMap((session) => session.lanes.map((lane) => new ClientToolAnswerer({ sessionId: session.id, lane }, client, ledger, new Rng(rng.int(2 ** 31)))));
    for (const answerer of answerers) answerer.start();
    const actors = Array.from({ length: options.concurrency }, (_, index) => {
      const session = sessions[Math.floor(index / LANES.length)];
      const lane = LANES[index % LANES.length];
      if (!session || !lane) throw new Error("no session for an actor");
      return new Actor(`a${index}`, client, ledger, new Rng(rng.int(2 ** 31)), session.id, lane);
    });

    const began = Date.now();
    let stopping = false;
    const work = Promise.allSettled(actors.map((actor) => actor.runUntil(() => stopping)));
    await cluster.chaos(new Rng(rng.int(2 ** 31)), options.kills, options.minGapMs, options.maxGapMs, log);
    await sleep(Math.max(0, options.durationSeconds * 1000 - (Date.now() - began)));
    stopping = true;
    log(`workload stopping after ${Math.round((Date.now() - began) / 1000)} s; waiting for the actors' last iterations`);
    const outcomes = await work;
    await topUpScripts(client, sessions);
    await collectScheduledRuns(client, ledger, sessions);

    const checker = new InvariantChecker(
      client,
      ledger,
      async (scope): Promise<ReceivedCall[]> => (await fetch(`${fixtureUrl}/requests/${scope}`)).json(),
      async (scope): Promise<RecordedMcpRequest[]> => (await fetch(`${mcpUrl}/calls/${scope}`)).json(),
    );
    outcomes.forEach((outcome, index) => {
      if (outcome.status === "rejected") checker.violations.push({ invariant: "the workload gets an answer to every request", detail: `actor a${index}: ${String(outcome.reason)}` });
    });
    // The answerers keep answering until every run settled: a run waiting on a client tool needs
    // them. Deliveries are awaited meanwhile (a refused one comes again 30 s later).
    const checking = checker.check(sessions);
    const [webhooks] = await Promise.all([checkWebhooks(() => flaky.deliveries(), ledger.operations, checker.violations, checking), checking]);
    for (const answerer of answerers) await answerer.stop();
    for (const follower of followers) await follower.stop();
    for (const problem of cluster.serverErrors) checker.violations.push({ invariant: "no 5xx", detail: problem });

    const clientPolls = answerers.reduce((total, answerer) => total + answerer.polls, 0);
    printSummary(log, { options, kills: cluster.kills, portRetries: cluster.portRetries, inProgressRetries: cluster.inProgressRetries, clientPolls, seconds: Math.round((Date.now() - began) / 1000), ledger, checker, followers, webhooks });
    keepState = checker.violations.length > 0;
    if (checker.violations.length > 0) console.error(`--- npm start output, last 20000 characters ---\n${cluster.output().slice(-20_000)}`);
    expect(checker.violations).toEqual([]);
  });
});
