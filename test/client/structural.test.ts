import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient, isApiError } from "../../client/index.ts";
import { newTenant } from "../api/helpers.ts";

// The SDK's fork and navigate against the real app in workerd.

describe("client SDK: fork and navigate", { timeout: 30_000 }, () => {
  it("navigates a lane back, runs the queued follow-up from there, and forks the result", async () => {
    const tenant = await newTenant("sdk_struct");
    const client = createClient({ baseUrl: "http://api.test/", key: tenant.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const session = await client.sessions.create({ name: "to fork" });
    await client.lanes.put(session.id, "main");
    await client.prompt(session.id, "main", "one");
    await client.prompt(session.id, "main", "two");
    const [first, answer] = (await client.branches.entries(session.id, "main", { order: "asc" })).items;
    if (!first || !answer) throw new Error("expected entries");

    await client.queue.followUp(session.id, "main", "then this");
    const navigated = await client.operations.navigate(session.id, "main", answer.id, { label: "after one" });
    if (navigated.state !== "settled") throw new Error("the navigation did not settle");
    expect(navigated.navigation).toMatchObject({ kind: "navigation", status: "completed", tipId: answer.id });
    expect(navigated.run).toMatchObject({ state: "settled", result: { kind: "run", status: "completed", fromTipId: answer.id } });

    const fork = await client.sessions.fork(session.id, { scope: "branch", branch: "main" });
    expect(fork).toMatchObject({ parentSessionId: session.id, name: "to fork" });
    const copied = (await client.branches.entries(fork.id, "main", { order: "asc" })).items.map((entry) => entry.id);
    expect(copied.slice(0, 2)).toEqual([first.id, answer.id]);
    expect(copied).toHaveLength(4);

    const refused = await client.operations.navigate(session.id, "main", copied[3] ?? "", {}).catch((error: unknown) => error);
    expect(isApiError(refused, "InvalidNavigation")).toBe(true);
  });
});

describe("client SDK: compact", { timeout: 30_000 }, () => {
  it("compacts a lane, then runs the queued follow-up after the compaction; refuses an empty lane", async () => {
    const tenant = await newTenant("sdk_compact");
    const client = createClient({ baseUrl: "http://api.test/", key: tenant.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const session = await client.sessions.create({ settings: { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } } });
    await client.lanes.put(session.id, "main");
    const refused = await client.operations.compact(session.id, "main").catch((error: unknown) => error);
    expect(isApiError(refused, "NothingToCompact")).toBe(true);

    await client.prompt(session.id, "main", "one");
    await client.prompt(session.id, "main", "two");
    await client.queue.followUp(session.id, "main", "then this");
    const compacted = await client.operations.compact(session.id, "main", { customInstructions: "be brief" });
    if (compacted.state !== "settled") throw new Error("the compaction did not settle");
    expect(compacted.compaction).toMatchObject({ kind: "compaction", status: "completed" });
    expect(compacted.run).toMatchObject({ state: "settled", result: { kind: "run", status: "completed", fromTipId: compacted.compaction.tipId } });
    const entries = (await client.branches.entries(session.id, "main", { order: "asc" })).items.map((entry) => entry.type);
    expect(entries).toEqual(["message", "message", "message", "message", "compaction", "message", "message"]);
  });
});

describe("client SDK: summarized navigate", { timeout: 30_000 }, () => {
  it("navigates back with a summary of the branch it leaves; the label reads back", async () => {
    const tenant = await newTenant("sdk_navsum");
    const client = createClient({ baseUrl: "http://api.test/", key: tenant.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const session = await client.sessions.create({});
    await client.lanes.put(session.id, "main");
    await client.prompt(session.id, "main", "one");
    await client.prompt(session.id, "main", "two");
    const [, answer] = (await client.branches.entries(session.id, "main", { order: "asc" })).items;
    if (!answer) throw new Error("expected entries");
    const navigated = await client.operations.navigate(session.id, "main", answer.id, { summarize: true, label: "retry", customInstructions: "short" });
    if (navigated.state !== "settled") throw new Error("the navigation did not settle");
    const path = (await client.branches.entries(session.id, "main", { order: "asc" })).items;
    expect(path.map((entry) => entry.type)).toEqual(["message", "message", "branch_summary"]);
    expect(navigated.navigation).toMatchObject({ status: "completed", tipId: path[2]?.id });
    expect(await client.entries.getLabel(session.id, answer.id)).toEqual({ entryId: answer.id, label: "retry" });
  });
});
