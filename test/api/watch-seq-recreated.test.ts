import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { unwrap } from "../helpers/sessions.ts";
import { call } from "./helpers.ts";
import { connect, events, expectSnapshot, isRunEnd, prompt, settled, strictlyIncreasing, watchSetup } from "./watch-helpers.ts";

// docs/api-watch.md "Seq": "seqs strictly increase on each socket"; "A restarted object continues
// from the reserved mark, so seqs never repeat and keep increasing across hibernation, eviction and
// deploys". The watch hub (watch-hub.ts) reserves its high-water mark in the object's storage once
// per SEQ_BLOCK and keeps `reserved` in memory. Deleting a session wipes the object's storage
// (session-lifecycle.ts: storage.deleteAll()), the stored mark included, but the hub of the same
// instance keeps numbering from memory without writing a new mark (it is still below the in-memory
// `reserved`). A session created again under the same id in that instance gets sockets that see
// seqs from the old count; once the object restarts (hibernation or eviction, sockets surviving) it
// finds no mark and numbers from 0 again: the surviving socket's seqs go backwards.

describe("seq on a session deleted and created again in the same object", { timeout: 30_000 }, () => {
  it("keeps strictly increasing on a socket that survives an eviction", async () => {
    const { key, stub, sessionPath, sessionId } = await watchSetup("watch_seqre");
    // Some events on the first incarnation (the hub reserves its first block here).
    const first = await prompt(stub, "main", "first incarnation");
    await settled(stub, "main", first);

    expect((await call(sessionPath, { method: "DELETE", token: key })).status).toBe(204);
    const created = await call("/v1/sessions", { body: { id: sessionId }, token: key });
    expect(created.status).toBe(201);
    unwrap(await stub.acquireLane("main"));

    const client = await connect(`${sessionPath}/lanes/main/watch`, key);
    const opened = await expectSnapshot(client);
    const before = await prompt(stub, "main", "before the eviction");
    const earlier = events(await client.until(isRunEnd(before)));
    await settled(stub, "main", before);

    // Hibernation-style restart: the socket and its attachment survive, memory does not.
    await evictDurableObject(stub);
    const after = await prompt(stub, "main", "after the eviction");
    const later = events(await client.until(isRunEnd(after)));
    const seqs = [opened.seq, ...earlier.map((e) => e.seq), ...later.map((e) => e.seq)];
    expect(later[0]?.seq, `seqs seen: ${seqs.join(",")}`).toBeGreaterThan(earlier.at(-1)?.seq ?? opened.seq);
    expect(strictlyIncreasing(seqs)).toBe(true);
    client.ws.close(1000);
  });
});
