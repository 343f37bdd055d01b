import { mkdirSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { Api, appendSteps, pollUntil, words } from "./client-helpers.ts";
import { launchChromium } from "./browser.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// The Inspector page (docs/inspector.md) in a real browser (headless Chromium through
// playwright-core; ./browser.ts says which one) against `npm start`: every action is taken on the page, and after each one the
// page's own fold of the lane (its watch folded with reduceLaneSnapshot) equals GET …/snapshot.
// Scripted steps (docs/providers.md) make the slow stream and the client tool call.

const SHOTS = new URL("../../test-results/", import.meta.url);

describe("the Inspector page", () => {
  let server: DevServer;
  let browser: Browser;
  let api: Api;
  let key: string;
  let inspectorUrl: string;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    // As docs/inspector.md says: `npm start -- --dev-key` prints a key and the page's address.
    // No minute cron: the page's Resume must be what polls the suspended run, not a tick in between.
    server = await startDevServer({ extraArgs: ["--dev-key", "--no-cron"] });
    const printed = await pollUntil("npm start -- --dev-key to print a key and the Inspector's address", async () => server.output(), (output) => /The Inspector .*: (\S+)/.test(output), 60_000);
    key = /export KEY=(\S+)/.exec(printed)?.[1] ?? "";
    inspectorUrl = /The Inspector .*: (\S+)/.exec(printed)?.[1] ?? "";
    api = new Api(server.baseUrl, key);
    browser = await launchChromium();
  }, 120_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  /** The page's fold and its seq, as the page itself exposes them. */
  async function pageFold(page: Page): Promise<{ seq: number | null; snapshot: LaneSnapshot | null }> {
    const text = await page.evaluate("JSON.stringify({ seq: window.__inspector?.seq() ?? null, snapshot: window.__inspector?.snapshot() ?? null })");
    if (typeof text !== "string") throw new Error("The page exposes no fold");
    return JSON.parse(text);
  }

  /** Waits (bounded) until the page's fold equals the server's snapshot at the same or a later seq, and asserts it. */
  async function expectFoldMatchesServer(page: Page, sessionId: string): Promise<LaneSnapshot> {
    await page.locator(`#lane[data-session="${sessionId}"][data-seq]`).waitFor();
    let last: { server: LaneSnapshot; page: LaneSnapshot | null } | undefined;
    await pollUntil(
      "the page's fold to equal GET …/snapshot",
      async () => {
        const served = await api.expect<{ seq: number; snapshot: LaneSnapshot }>(200, "GET", `/v1/sessions/${sessionId}/lanes/main/snapshot`);
        const folded = await pageFold(page);
        last = { server: served.snapshot, page: folded.snapshot };
        return folded.seq !== null && folded.seq >= served.seq && isDeepStrictEqual(JSON.parse(JSON.stringify(folded.snapshot)), served.snapshot);
      },
      (equal) => equal,
      20_000,
    ).catch(() => undefined);
    expect(last?.page).toEqual(last?.server);
    if (!last) throw new Error("No snapshot was read");
    return last.server;
  }

  /** A desktop-sized page of its own, collecting page errors and console errors. */
  async function desktopPage(): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    // Console errors include Content-Security-Policy refusals and failed loads of the page's files.
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    return { context, page, problems };
  }

  async function idleWith(page: Page, status: string): Promise<void> {
    await page.locator('#lane[data-operation="idle"] [data-last-status]').and(page.locator(`[data-last-status="${status}"]`)).waitFor({ timeout: 30_000 });
  }

  it("opens with a key, creates a session, streams, steers, aborts, answers two client tools, navigates, labels, resumes a deferred run, queues, adds and watches a lane, forks; the fold equals the server's snapshot after each", async () => {
    const { context, page, problems } = await desktopPage();
    expect(inspectorUrl).toBe(`${server.baseUrl}/inspector`);
    await page.goto(inspectorUrl);
    await page.getByLabel("Tenant API key").fill(key);
    await page.getByRole("button", { name: "Open" }).click();
    await expect.poll(() => page.locator("#whoami").textContent()).toBe("tenant dev");
    expect(await page.locator("#key-form").isVisible()).toBe(false);
    // The key lives in the tab's session storage, never in the address.
    expect(page.url()).toBe(`${server.baseUrl}/inspector`);
    expect(await page.evaluate("sessionStorage.getItem('inspector.tenantKey')")).toBe(key);

    await page.getByLabel("New session name").fill("Inspector demo");
    await page.getByRole("button", { name: "Create" }).click();
    await page.locator("#lane[data-seq]").waitFor();
    const listed = await api.expect<{ items: { id: string; name: string | null }[] }>(200, "GET", "/v1/sessions?order=desc&limit=1");
    const sid = listed.items[0]?.id ?? "";
    expect(listed.items[0]?.name).toBe("Inspector demo");
    expect(await page.getByLabel("New session name").inputValue()).toBe("");
    await expect.poll(() => page.locator("#session-title").textContent()).toBe("Inspector demo");
    await expectFoldMatchesServer(page, sid);

    // A slow scripted answer streams into the page; a steer from the page makes a second turn.
    await appendSteps(api, sid, [{ text: words(40, "stream"), chunkMs: 100 }, { text: "the answer after the steer" }]);
    await page.getByLabel("Prompt", { exact: true }).fill("tell me a long story");
    await page.getByLabel("Model").selectOption("scripted/script");
    await page.getByRole("button", { name: "Send prompt" }).click();
    await page.locator(".live-streaming .streaming-text").filter({ hasText: "stream3" }).waitFor({ timeout: 20_000 });
    await page.getByLabel("Message for the queue").fill("please also mention the weather");
    await page.getByRole("button", { name: "Steer" }).click();
    await idleWith(page, "completed");
    const steered = await expectFoldMatchesServer(page, sid);
    expect(steered.configuration.model).toEqual({ provider: "scripted", modelId: "script" });
    expect(steered.transcript.map((entry) => (entry.type === "message" ? entry.message.role : entry.type))).toEqual(["user", "assistant", "user", "assistant"]);
    // The tree follows: four entries, the lane's tip marked, the second answer shown.
    await expect.poll(() => page.locator("#session .tree-host").getAttribute("data-entries")).toBe("4");
    await expect.poll(() => page.locator("svg.tree g.lane-tip").getAttribute("data-entry")).toBe(steered.tipId);
    await expect.poll(() => page.locator("svg.tree").textContent()).toContain("the answer after the steer");

    // Abort from the page while a slow answer streams.
    await appendSteps(api, sid, [{ text: words(200, "slow"), chunkMs: 200 }]);
    await page.getByLabel("Prompt", { exact: true }).fill("another long one");
    await page.getByRole("button", { name: "Send prompt" }).click();
    await page.locator(".live-streaming .streaming-text").filter({ hasText: "slow2" }).waitFor({ timeout: 20_000 });
    await page.getByRole("button", { name: "Abort" }).click();
    await idleWith(page, "aborted");
    await expectFoldMatchesServer(page, sid);

    // A client tool call waits for the page's answer.
    await api.expect(201, "PUT", `/v1/sessions/${sid}/tools/approve`, { body: { kind: "client", description: "Asks a person", parameters: { type: "object", properties: {} } } });
    await api.expect(200, "PATCH", `/v1/sessions/${sid}/lanes/main/config`, { body: { activeTools: ["approve"] } });
    // Two calls in parallel: answering one leaves the other's form, its text and its focus alone.
    await api.expect(201, "POST", `/v1/sessions/${sid}/lists/scripted/steps`, { body: { toolCalls: [{ name: "approve", arguments: {} }, { name: "approve", arguments: { second: true } }] } });
    await appendSteps(api, sid, [{ text: "thanks for approving" }]);
    await page.getByLabel("Prompt", { exact: true }).fill("ask for approval");
    await page.getByRole("button", { name: "Send prompt" }).click();
    const answers = page.locator("form[data-answer]");
    await expect.poll(() => answers.count(), { timeout: 20_000 }).toBe(2);
    await expectFoldMatchesServer(page, sid);
    const secondCall = await answers.nth(1).getAttribute("data-answer");
    const [first, second] = [answers.nth(0), page.locator(`form[data-answer="${secondCall}"]`)];
    await first.getByLabel("approve: result text").fill("Approved by the inspector");
    await second.getByLabel("approve: result text").fill("Also approved");
    await first.getByRole("button", { name: "Send result" }).click();
    await second.getByLabel("approve: result text").focus();
    await expect.poll(() => answers.count()).toBe(1);
    expect(await answers.getAttribute("data-answer")).toBe(secondCall);
    expect(await page.evaluate("document.activeElement?.value")).toBe("Also approved");
    await second.getByRole("button", { name: "Send result" }).click();
    await idleWith(page, "completed");
    const answered = await expectFoldMatchesServer(page, sid);
    expect(JSON.stringify(answered.transcript)).toContain("Approved by the inspector");
    expect(JSON.stringify(answered.transcript)).toContain("Also approved");

    // Navigate: open the first entry of the tree with the keyboard (the tree is one tab stop; Home
    // moves to the oldest row), then move the lane there. A run that ends meanwhile redraws the
    // tree (its entries, its tip, its labels): the keyboard stays on the row it was on, and a lane
    // name typed beforehand stays in its field.
    await expect.poll(() => page.locator("svg.tree").textContent()).toContain("thanks for approving");
    const firstId = await page.locator("svg.tree g[data-entry]").first().getAttribute("data-entry");
    await page.getByLabel("New lane").fill("side");
    await page.locator('svg.tree g[tabindex="0"]').focus();
    await page.keyboard.press("Home");
    const drawn = Number(await page.locator("#session .tree-host").getAttribute("data-entries"));
    await appendSteps(api, sid, [{ text: "an answer while the keyboard is on the tree" }]);
    await api.expect(200, "POST", `/v1/sessions/${sid}/lanes/main/prompt`, { body: { prompt: "a prompt from elsewhere", wait: 30 } });
    await expect.poll(() => page.locator("#session .tree-host").getAttribute("data-entries")).toBe(String(drawn + 2));
    await expect.poll(() => page.locator("svg.tree").textContent()).toContain("an answer while the keyboard is on the tree");
    expect(await page.evaluate("document.activeElement?.getAttribute('data-entry')")).toBe(firstId);
    expect(await page.getByLabel("New lane").inputValue()).toBe("side");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator("#entry-title").textContent()).toBe("Entry: user");
    await page.getByRole("button", { name: "Navigate lane main here" }).click();
    await expect.poll(() => page.locator("#lane [data-tip]").getAttribute("data-tip"), { timeout: 20_000 }).toBe(firstId);
    const navigated = await expectFoldMatchesServer(page, sid);
    expect(navigated.tipId).toBe(firstId);
    await expect.poll(() => page.locator("svg.tree g.lane-tip").getAttribute("data-entry")).toBe(firstId);

    // Label the entry from the page, then prompt from there: a second branch of the tree.
    await page.getByLabel("Label", { exact: true }).fill("start");
    await page.getByRole("button", { name: "Save label" }).click();
    await expect.poll(async () => (await api.expect<{ label: string | null }>(200, "GET", `/v1/sessions/${sid}/entries/${firstId}/label`)).label).toBe("start");
    await expect.poll(() => page.locator("svg.tree").textContent()).toContain("label: start");
    await appendSteps(api, sid, [{ text: "a different answer on a new branch" }]);
    await page.getByLabel("Prompt", { exact: true }).fill("take another path");
    await page.getByRole("button", { name: "Send prompt" }).click();
    await idleWith(page, "completed");
    const branched = await expectFoldMatchesServer(page, sid);
    expect(branched.transcript.map((entry) => entry.id)).toEqual([firstId, expect.any(String), expect.any(String)]);
    await expect.poll(() => page.locator("svg.tree g.lane-tip").getAttribute("data-entry")).toBe(branched.tipId);
    await expect.poll(() => page.locator("svg.tree").textContent()).toContain("a different answer on a new branch");
    await page.evaluate("window.scrollTo(0, 0); document.getElementById('lane').scrollTo(0, 0)");
    await page.screenshot({ path: new URL("inspector-desktop.png", SHOTS).pathname });

    // A deferred answer suspends the run; Resume from the page polls it now.
    await appendSteps(api, sid, [{ deferred: { pollAfterMs: 0, ready: { text: "the deferred answer arrived" } } }]);
    await page.getByLabel("Prompt", { exact: true }).fill("answer me later");
    await page.getByRole("button", { name: "Send prompt" }).click();
    await page.locator(".live-operation").filter({ hasText: "Suspended" }).waitFor({ timeout: 20_000 });
    const suspended = await expectFoldMatchesServer(page, sid);
    expect(suspended.operation?.deferred?.poll).toBe(0);
    await page.getByRole("button", { name: "Resume" }).click();
    await idleWith(page, "completed");
    expect(JSON.stringify((await expectFoldMatchesServer(page, sid)).transcript)).toContain("the deferred answer arrived");

    // A next-run message waits in the queue of the idle lane.
    await page.getByLabel("Message for the queue").fill("for the next run");
    await page.getByRole("button", { name: "Next run" }).click();
    await page.locator('.live-queue [data-queued="nextRun"]').waitFor();
    expect((await expectFoldMatchesServer(page, sid)).queues.map((item) => item.kind)).toEqual(["nextRun"]);

    // A second lane at the first entry, its name typed long before; watch it, then main again.
    await page.getByLabel("at entry").fill(firstId ?? "");
    await page.getByRole("button", { name: "Add lane" }).click();
    await expect.poll(() => page.locator("#lane-title").textContent()).toBe("Lane side");
    await expect.poll(() => page.locator("#lane [data-tip]").getAttribute("data-tip")).toBe(firstId);
    expect((await api.expect<{ tipId: string | null }>(200, "GET", `/v1/sessions/${sid}/lanes/side`)).tipId).toBe(firstId);
    expect(await page.getByLabel("Watch lane").inputValue()).toBe("side");
    expect(await page.getByLabel("New lane").inputValue()).toBe("");
    await page.getByLabel("Watch lane").selectOption("main");
    await expect.poll(() => page.locator("#lane-title").textContent()).toBe("Lane main");
    expect((await expectFoldMatchesServer(page, sid)).queues.map((item) => item.kind)).toEqual(["nextRun"]);

    await expect.poll(() => page.locator(".usage table th[scope=row]").allTextContents()).toContain("scripted/script");
    const { stats } = await api.expect<{ stats: { messageCount: number } }>(200, "GET", `/v1/sessions/${sid}`);
    await expect.poll(() => page.locator(`button[data-session="${sid}"] .row-details`).textContent()).toContain(`${stats.messageCount} messages`);

    // Fork the lane's path up to the chosen entry: the page opens the new session.
    await page.getByRole("button", { name: "Fork main up to here" }).click();
    await expect.poll(() => page.locator("#status").textContent()).toMatch(/^Forked into s_/);
    const forkId = (await page.locator("#status").textContent())?.replace("Forked into ", "") ?? "";
    expect((await api.expect<{ parentSessionId?: string }>(200, "GET", `/v1/sessions/${forkId}`)).parentSessionId).toBe(sid);
    await expect.poll(() => page.locator("#session .facts dd").first().textContent()).toBe(forkId);
    expect((await expectFoldMatchesServer(page, forkId)).transcript.map((entry) => entry.id)).toEqual([firstId]);
    expect(problems).toEqual([]);

    // A refused control says why, with the API's error code (the fork's one entry leaves nothing to compact).
    await page.getByRole("button", { name: "Compact" }).click();
    await expect.poll(() => page.locator("#status").textContent()).toContain("Compact failed: 422 NothingToCompact");
    await context.close();
    // A dozen steps, each with its own bounded wait: ~20 s on an idle machine, over 60 s (the
    // suite's default budget) when the 2 cores are busy.
  }, 150_000);

  it("fits a 360 px wide screen without horizontal scrolling, in the dark colour scheme", async () => {
    const context = await browser.newContext({ viewport: { width: 360, height: 780 }, deviceScaleFactor: 1, colorScheme: "dark" });
    // A session of its own with a short conversation, so this test stands alone.
    await api.expect(201, "POST", "/v1/sessions", { body: { id: "narrow", name: "A session with a rather long name to wrap on a phone" } });
    await api.expect(201, "PUT", "/v1/sessions/narrow/lanes/main", { body: {} });
    await api.expect(200, "POST", "/v1/sessions/narrow/lanes/main/prompt", { body: { prompt: "a prompt that is long enough to need wrapping on a narrow screen", wait: 30 } });
    const page = await context.newPage();
    await page.goto(`${server.baseUrl}/inspector`);
    // A wrong key is refused and forgotten; the form asks again.
    await page.getByLabel("Tenant API key").fill("sk_nobody_wrong");
    await page.getByRole("button", { name: "Open" }).click();
    await expect.poll(() => page.locator("#status").textContent()).toContain("401 Unauthenticated");
    expect(await page.evaluate("sessionStorage.getItem('inspector.tenantKey')")).toBe(null);
    await page.getByLabel("Tenant API key").fill(key);
    await page.getByRole("button", { name: "Open" }).click();
    await page.locator('button.session-row[data-session="narrow"]').click();
    await page.locator("#lane[data-seq]").waitFor();
    await page.locator("svg.tree").waitFor();
    const widths = await page.evaluate("JSON.stringify([document.documentElement.scrollWidth, document.documentElement.clientWidth])");
    expect(JSON.parse(String(widths))).toEqual([360, 360]);
    expect(await page.evaluate("getComputedStyle(document.body).backgroundColor")).toBe("rgb(13, 17, 23)");
    await page.screenshot({ path: new URL("inspector-360.png", SHOTS).pathname, fullPage: true });
    await context.close();
  });

  it("lists the agents, shows a session's agent version and metadata, the version a run used, and an agent's sessions", async () => {
    // An agent on the scripted echo model, a session made from its version 1, then a version 2:
    // the list shows the latest version, the session and its run the one it is bound to.
    await api.expect(201, "POST", "/v1/agents", { body: { id: "support", name: "Support desk", model: { provider: "scripted", modelId: "echo" } } });
    await api.expect(201, "POST", "/v1/sessions", { body: { id: "from-agent", name: "A session from an agent", agent: "support", metadata: { user: "u_42", plan: "pro" } } });
    await api.expect(200, "PATCH", "/v1/agents/support", { body: { settings: { systemPrompt: "Be brief." } } });
    await api.expect(201, "POST", "/v1/sessions", { body: { id: "no-agent" } });
    const { context, page, problems } = await desktopPage();
    await page.goto(inspectorUrl);
    await page.getByLabel("Tenant API key").fill(key);
    await page.getByRole("button", { name: "Open" }).click();

    const agentRow = page.locator('ul.agents button[data-agent="support"]');
    await expect.poll(() => agentRow.textContent()).toContain("Support desk");
    expect(await agentRow.textContent()).toContain("support · @ 2 · scripted/echo");
    const sessionRow = page.locator('ul.sessions button.session-row[data-session="from-agent"]');
    await expect.poll(() => sessionRow.locator(".row-agent").textContent()).toBe("agent support @ 1");

    // The session names its agent version and its metadata; a prompt from the page runs under @ 1.
    await sessionRow.click();
    await expect.poll(() => page.locator("#session dd[data-agent]").getAttribute("data-agent")).toBe("support @ 1");
    expect(await page.locator("#session dd[data-metadata]").textContent()).toBe("plan = pro, user = u_42");
    await page.locator('#lane[data-session="from-agent"][data-seq]').waitFor();
    await page.getByLabel("Prompt", { exact: true }).fill("hello from the agent's session");
    await page.getByRole("button", { name: "Send prompt" }).click();
    await idleWith(page, "completed");
    expect(await page.locator(".live-result [data-result-agent]").textContent()).toBe("Ran under agent support @ 1");
    const served = await expectFoldMatchesServer(page, "from-agent");
    expect(served.lastResult?.agent).toEqual({ id: "support", version: 1 });

    // The session's agent opens the version it is bound to; the list's row, the latest.
    await page.getByRole("button", { name: "Agent support @ 1", exact: true }).click();
    await expect.poll(() => page.locator("#agent-title").textContent()).toBe("Agent Support desk @ 1");
    await agentRow.click();
    await expect.poll(() => page.locator("#agent-title").textContent()).toBe("Agent Support desk @ 2");
    expect(await page.locator("#agents pre.json").textContent()).toContain("Be brief.");

    // The agent's sessions: the list filtered by ?agent=support holds exactly that session.
    await page.getByRole("button", { name: "Sessions of support" }).click();
    const rows = page.locator("ul.sessions button.session-row");
    await expect.poll(async () => (await rows.evaluateAll((buttons) => buttons.map((button) => button.getAttribute("data-session")))).join(",")).toBe("from-agent");
    await page.getByRole("button", { name: "Show all sessions" }).click();
    await expect.poll(() => page.locator('ul.sessions button.session-row[data-session="no-agent"]').count()).toBe(1);
    expect(await page.locator('ul.sessions button.session-row[data-session="no-agent"] .row-agent').count()).toBe(0);
    await page.screenshot({ path: new URL("inspector-agents.png", SHOTS).pathname, fullPage: true });
    expect(problems).toEqual([]);
    await context.close();
  });

  it("pages through the sessions with the keyboard: the focus stays on the pager", async () => {
    // More sessions than two pages (20 each) hold, whatever the tests before left: Older stays enabled on page 2.
    for (let index = 0; index < 41; index++) await api.expect(201, "POST", "/v1/sessions", { body: { id: `paged-${index}` } });
    const newest = (await api.expect<{ items: { id: string }[] }>(200, "GET", "/v1/sessions?order=desc&limit=21")).items.map((row) => row.id);
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${server.baseUrl}/inspector`);
    await page.getByLabel("Tenant API key").fill(key);
    await page.getByRole("button", { name: "Open" }).click();
    const firstRow = page.locator("ul.sessions button.session-row").first();
    await expect.poll(() => firstRow.getAttribute("data-session")).toBe(newest[0]);
    await page.getByRole("button", { name: "Older" }).focus();
    await page.keyboard.press("Enter");
    await expect.poll(() => firstRow.getAttribute("data-session")).toBe(newest[20]);
    expect(await page.locator("#sessions .pager").textContent()).toContain("Page 2");
    expect(await page.evaluate("document.activeElement?.textContent")).toBe("Older");
    // Back with Shift+Tab and Enter; Newer is then disabled, so the focus moves to Older.
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Enter");
    await expect.poll(() => firstRow.getAttribute("data-session")).toBe(newest[0]);
    expect(await page.getByRole("button", { name: "Newer" }).isDisabled()).toBe(true);
    expect(await page.evaluate("document.activeElement?.textContent")).toBe("Older");
    await context.close();
  });

  it("offers every lane of a session and tags every branch tip, also beyond the 50 the Session embeds", async () => {
    // GET /v1/sessions/{sid} embeds only the first 50 lanes and branches by name (docs/api-sessions.md);
    // the page reads the rest from lanesNextCursor / branchesNextCursor. 51 lanes a00…a50 sort before main.
    const sid = "many-lanes";
    await api.expect(201, "POST", "/v1/sessions", { body: { id: sid, name: "Many lanes" } });
    await api.expect(201, "PUT", `/v1/sessions/${sid}/lanes/main`, { body: {} });
    const { entryId: tip } = await api.expect<{ entryId: string }>(201, "POST", `/v1/sessions/${sid}/branches/main/entries`, { body: { customType: "note", data: { n: 1 } } });
    for (let index = 0; index <= 50; index++) await api.expect(201, "PUT", `/v1/sessions/${sid}/lanes/a${String(index).padStart(2, "0")}`, { body: {} });
    const session = await api.expect<{ lanesNextCursor: string | null }>(200, "GET", `/v1/sessions/${sid}`);
    expect(session.lanesNextCursor).not.toBe(null);

    const { context, page } = await desktopPage();
    await page.goto(inspectorUrl);
    await page.getByLabel("Tenant API key").fill(key);
    await page.getByRole("button", { name: "Open" }).click();
    await page.locator(`button.session-row[data-session="${sid}"]`).click();
    await page.locator(`#session .tree-host[data-entries="1"]`).waitFor();
    const options = await page.locator("#lane-select option").evaluateAll((nodes) => nodes.map((node) => node.getAttribute("value")));
    const tipRow = (await page.locator(`svg.tree g[data-entry="${tip}"]`).getAttribute("aria-label")) ?? "";
    const branchesFact = await page.locator("#session dl.facts").textContent();
    expect({
      lanesOffered: options.length,
      mainOffered: options.includes("main"),
      mainTagged: tipRow.includes("⎇ main (lane)"),
      mainInBranchesFact: /\bmain\b/.test(branchesFact ?? ""),
    }).toEqual({ lanesOffered: 52, mainOffered: true, mainTagged: true, mainInBranchesFact: true });
    await context.close();
  });

  it("keeps the tab's key when the key check fails for a passing reason (503 on reload), and forgets it on 401", async () => {
    // docs/inspector.md: the key is asked once per tab; only a refused key (401, 403) is dropped.
    const { context, page } = await desktopPage();
    await page.goto(inspectorUrl);
    await page.getByLabel("Tenant API key").fill(key);
    await page.getByRole("button", { name: "Open" }).click();
    await expect.poll(() => page.locator("#whoami").textContent()).toBe("tenant dev");
    // The service hiccups once on reload: GET /v1/me answers 503 (a deployment in progress, an overload).
    let answer = 503;
    await page.route((url) => url.pathname === "/v1/me", (route) =>
      route.fulfill({ status: answer, contentType: "application/json", body: JSON.stringify({ error: { code: answer === 503 ? "Overloaded" : "Unauthenticated", message: "test" } }) }),
    );
    await page.reload();
    await expect.poll(() => page.locator("#status").textContent()).toContain("503");
    const stored = () => page.evaluate("sessionStorage.getItem('inspector.tenantKey')");
    expect({ stored: await stored(), keyFormShown: await page.locator("#key-form").isVisible() }).toEqual({ stored: key, keyFormShown: false });
    // A key the service refuses is forgotten, and asked for again.
    answer = 401;
    await page.reload();
    await expect.poll(() => page.locator("#key-form").isVisible()).toBe(true);
    expect(await stored()).toBe(null);
    await context.close();
  });
});
