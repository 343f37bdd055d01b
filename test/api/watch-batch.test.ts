import { describe, expect, it } from "vitest";
import type { LaneSnapshot } from "../../schema/lane.ts";
import type { SessionSnapshot } from "../../schema/watch.ts";
import { unwrap } from "../helpers/sessions.ts";
import { errorCode } from "./helpers.ts";
import { connect, events, expectSnapshot, fold, isRunEnd, prompt, settled, upgrade, watchSetup } from "./watch-helpers.ts";

// `?batch=true` (docs/api-watch.md "Batch frames"): the events that are due together (a run's
// start, a settlement) leave as one frame. The stream itself is the same: the same events with the
// same seqs, folding to the same snapshot; only the framing differs.

describe("batch frames", { timeout: 30_000 }, () => {
  it("a batched watcher gets the same events with the same seqs as a plain one, in fewer frames, and folds to a fresh snapshot", async () => {
    const { key, stub, sessionPath } = await watchSetup("w_batch");
    const plain = await connect(`${sessionPath}/lanes/main/watch`, key);
    const batched = await connect(`${sessionPath}/lanes/main/watch?batch=true`, key);
    const sessionWide = await connect<SessionSnapshot>(`${sessionPath}/watch?batch=true`, key);
    const [plainFirst, batchedFirst] = [await expectSnapshot(plain), await expectSnapshot(batched)];
    await expectSnapshot(sessionWide);
    const runs = [await prompt(stub, "main", "first question")];
    const plainRead = await plain.until(isRunEnd(runs[0] ?? ""));
    const batchedRead = await batched.until(isRunEnd(runs[0] ?? ""));
    runs.push(await prompt(stub, "main", "second question"));
    plainRead.push(...(await plain.until(isRunEnd(runs[1] ?? ""))));
    batchedRead.push(...(await batched.until(isRunEnd(runs[1] ?? ""))));
    for (const run of runs) await settled(stub, "main", run);
    const sessionRead = events(await sessionWide.until(isRunEnd(runs[1] ?? "")));

    expect(events(batchedRead)).toStrictEqual(events(plainRead));
    expect(batchedFirst.seq).toBe(plainFirst.seq);
    const fresh: LaneSnapshot = unwrap(await stub.laneSnapshot("main"));
    expect(fold(batchedFirst.snapshot, events(batchedRead).map((e) => e.event))).toStrictEqual(fresh);
    // Events bound in the same task leave together: here an instant run's events share one frame.
    expect(batched.frames().batches).toBeGreaterThanOrEqual(runs.length);
    expect(batched.frames().all).toBeLessThan(plain.frames().all);
    expect(plain.frames().batches).toBe(0);
    // The session stream is batched the same way and carries both runs' ends.
    expect(sessionRead.filter((e) => e.event.type === "run_end").map((e) => e.event.type === "run_end" && e.event.runId)).toEqual(runs);
    for (const client of [plain, batched, sessionWide]) client.ws.close(1000, "done");
  });

  it("a resnapshot on a batched socket comes after every event numbered before it, as on a plain one", async () => {
    const { key, stub, sessionPath } = await watchSetup("w_batch_resnap");
    const client = await connect(`${sessionPath}/lanes/main/watch?batch=true`, key);
    const first = await expectSnapshot(client);
    const runId = await prompt(stub, "main", "hello");
    client.send(JSON.stringify({ type: "resnapshot" }));
    const read = await client.until((message) => message.type === "snapshot");
    const again = read.at(-1);
    if (again?.type !== "snapshot") throw new Error("no resnapshot");
    for (const { seq } of events(read)) expect(seq).toBeLessThanOrEqual(again.seq);
    expect(fold(first.snapshot, events(read).map((e) => e.event))).toStrictEqual(again.snapshot);
    await settled(stub, "main", runId);
    client.ws.close(1000, "done");
  });

  it("refuses a batch value other than true or false with 400 ValidationFailed, before any socket is opened", async () => {
    const { key, sessionPath } = await watchSetup("w_batch_bad");
    const response = await upgrade(`${sessionPath}/lanes/main/watch?batch=yes`, { authorization: `Bearer ${key}` });
    expect(response.status).toBe(400);
    expect(await errorCode(response)).toBe("ValidationFailed");
    expect(response.webSocket).toBeNull();
  });
});
