import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, createTenant, isEvent, openLaneWatch, readAdminToken } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// Structural operations against `npm start`, as a client would use them: a session of 10,000
// entries written over HTTP, navigated back and compacted through the REST conveniences while a
// WebSocket watcher looks on, then forked (one lane's branch, and the whole tree) and read back
// page by page.

const ENTRIES = 10_000;
const IN_FLIGHT = 32;

type Entry = { id: string; parentId: string | null };
type Page = { items: Entry[]; nextCursor: string | null };

async function allEntries(api: Api, path: string): Promise<Entry[]> {
  const items: Entry[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const page: Page = await api.expect(200, "GET", `${path}${path.includes("?") ? "&" : "?"}limit=1000${cursor ? `&cursor=${cursor}` : ""}`);
    items.push(...page.items);
    cursor = page.nextCursor;
    if (cursor === null) return items;
  }
  throw new Error(`${path}: more than 100 pages`);
}

describe("navigate, compact and fork a 10,000-entry session over HTTP (npm start)", () => {
  let server: DevServer;
  let api: Api;
  let key: string;
  beforeAll(async () => {
    server = await startDevServer();
    const admin = new Api(server.baseUrl, readAdminToken());
    let tenantId: string;
    ({ api, key, tenantId } = await createTenant(admin, "structural"));
    // 10,000 writes in a minute or two: lift the tenant's per-minute request quota, as an operator would.
    await admin.expect(200, "PATCH", `/v1/admin/tenants/${tenantId}/quotas`, { body: { requestsPerMinute: 1_000_000 } });
    await api.expect(201, "POST", "/v1/sessions", { body: { id: "big", name: "big one" } });
    await api.expect(201, "PUT", "/v1/sessions/big/lanes/main");
    let next = 0;
    const writer = async () => {
      while (next < ENTRIES) {
        const index = next++;
        await api.expect(201, "POST", "/v1/sessions/big/lanes/main/entries", { body: { message: { role: "user", content: `note ${index}`, timestamp: index } } });
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, writer));
  }, 600_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
  });

  it("navigates back with a label while a watcher sees navigation_start and navigation_end; a new watch starts at the target", async () => {
    const answered = await api.expect<{ tipId: string }>(200, "POST", "/v1/sessions/big/lanes/main/prompt", { body: { prompt: "hello at the end" } });
    const path = await allEntries(api, "/v1/sessions/big/branches/main/entries?order=asc");
    expect(path).toHaveLength(ENTRIES + 2);
    const target = path[ENTRIES - 1];
    if (!target) throw new Error("no target");
    const watch = await openLaneWatch(server.baseUrl, key, "big", "main");
    try {
      await watch.next();
      const navigated = await api.expect<{ navigation: { status: string; fromTipId: string; tipId: string } }>(200, "POST", "/v1/sessions/big/lanes/main/navigate", {
        body: { targetId: target.id, label: "before the question" },
      });
      expect(navigated.navigation).toMatchObject({ status: "completed", fromTipId: answered.tipId, tipId: target.id });
      const seen = await watch.until(isEvent("navigation_end"));
      expect(seen.filter((message) => message.type === "event").map((message) => (message.type === "event" ? message.event.type : ""))).toEqual(
        ["navigation_start", "navigation_end"],
      );
    } finally {
      await watch.close();
    }
    const fresh = await openLaneWatch(server.baseUrl, key, "big", "main");
    try {
      const first = await fresh.next();
      expect(first.type === "snapshot" && first.snapshot.tipId).toBe(target.id);
    } finally {
      await fresh.close();
    }
  }, 120_000);

  it("compacts the lane through the REST convenience while a watcher sees compaction_start and compaction_end", async () => {
    const watch = await openLaneWatch(server.baseUrl, key, "big", "main");
    try {
      await watch.next();
      const compacted = await api.expect<{ compaction: { kind: string; status: string; tipId: string } }>(200, "POST", "/v1/sessions/big/lanes/main/compact", {
        body: { customInstructions: "Keep the note numbers." },
      });
      expect(compacted.compaction).toMatchObject({ kind: "compaction", status: "completed" });
      const seen = await watch.until(isEvent("compaction_end"));
      expect(seen.some(isEvent("compaction_start"))).toBe(true);
    } finally {
      await watch.close();
    }
    const fresh = await openLaneWatch(server.baseUrl, key, "big", "main");
    try {
      const first = await fresh.next();
      // The lane's conversation now starts at the compaction entry.
      expect(first.type === "snapshot" && first.snapshot.transcript[0]?.type).toBe("compaction");
    } finally {
      await fresh.close();
    }
  }, 120_000);

  it("forks the lane's branch and the whole tree; each fork reads back page by page", async () => {
    const branch = await api.expect<{ id: string; parentSessionId: string; stats: { messageCount: number } }>(201, "POST", "/v1/sessions/big/fork", { body: { scope: "branch", branch: "main", id: "big_branch" } });
    // The lane's path: the 10,000 notes, then the compaction entry at its tip.
    expect(branch).toMatchObject({ id: "big_branch", parentSessionId: "big", stats: { messageCount: ENTRIES } });
    expect(await allEntries(api, "/v1/sessions/big_branch/entries")).toHaveLength(ENTRIES + 1);
    const tree = await api.expect<{ id: string; stats: { messageCount: number } }>(201, "POST", "/v1/sessions/big/fork", { body: { scope: "tree", id: "big_tree" } });
    expect(tree.stats.messageCount).toBe(ENTRIES + 2);
    expect(await allEntries(api, "/v1/sessions/big_tree/entries")).toHaveLength(ENTRIES + 3);
    const listed = await api.expect<{ items: { id: string }[] }>(200, "GET", "/v1/sessions");
    expect(listed.items.map((item) => item.id)).toEqual(expect.arrayContaining(["big", "big_branch", "big_tree"]));
    // The fork runs on its own.
    await api.expect(200, "POST", "/v1/sessions/big_branch/lanes/main/prompt", { body: { prompt: "in the fork" } });
  }, 180_000);
});
