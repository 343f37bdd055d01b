import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, pollUntil } from "./client-helpers.ts";
import { launchChromium } from "./browser.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// The Inspector page (docs/inspector.md) in a real browser against `npm start` when answers come
// late, out of order or twice: the page shows what the user asked for last, reads the tree again
// after its watch reconnects, and holds one watch socket. Each race is made certain by holding a
// request (page.route) or the watch's reconnect; the data is set up through the public REST API.

describe("the Inspector page under late and repeated answers", () => {
  let server: DevServer;
  let browser: Browser;
  let api: Api;
  let key: string;
  beforeAll(async () => {
    server = await startDevServer({ extraArgs: ["--dev-key", "--no-cron"] });
    const printed = await pollUntil("npm start -- --dev-key to print a key", async () => server.output(), (output) => /export KEY=(\S+)/.test(output), 60_000);
    key = /export KEY=(\S+)/.exec(printed)?.[1] ?? "";
    api = new Api(server.baseUrl, key);
    browser = await launchChromium();
  }, 120_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  /** A desktop-sized page of its own (with `init` run before the page's script), signed in. */
  async function openPage(init?: string): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    if (init !== undefined) await context.addInitScript(init);
    const page = await context.newPage();
    await page.goto(`${server.baseUrl}/inspector`);
    await page.getByLabel("Tenant API key").fill(key);
    await page.getByRole("button", { name: "Open" }).click();
    await expect.poll(() => page.locator("#whoami").textContent()).toBe("tenant dev");
    return { context, page };
  }

  async function sessionWithEntry(id: string, name: string): Promise<string> {
    await api.expect(201, "POST", "/v1/sessions", { body: { id, name } });
    await api.expect(201, "PUT", `/v1/sessions/${id}/lanes/main`, { body: {} });
    return appendNote(id, 1);
  }

  async function appendNote(sid: string, n: number): Promise<string> {
    const { entryId } = await api.expect<{ entryId: string }>(201, "POST", `/v1/sessions/${sid}/branches/main/entries`, { body: { customType: "note", data: { n } } });
    return entryId;
  }

  /** Records every WebSocket the page makes (window.__sockets); while window.__hold, new ones fail to upgrade. */
  const SOCKET_SPY = `(() => {
    const Native = window.WebSocket;
    window.__sockets = [];
    window.__hold = false;
    window.WebSocket = class extends Native {
      constructor(url, protocols) {
        const target = window.__hold ? String(url).replace("/watch", "/not-a-watch") : url;
        super(target, protocols);
        window.__sockets.push(this);
      }
    };
  })();`;

  it("reads the tree again after the watch reconnects, so entries written while it was away are drawn", async () => {
    // The watch socket is replaced now and then (max age, a slow socket, a network change: the SDK
    // reconnects and gets a fresh snapshot). Here the test drops it and holds the reconnect briefly
    // (same-origin attempts to a path that refuses the upgrade) while two entries are written.
    const sid = "race-reconnect";
    await sessionWithEntry(sid, "Reconnect");
    const { context, page } = await openPage(SOCKET_SPY);
    await page.locator(`button.session-row[data-session="${sid}"]`).click();
    await page.locator(`#lane[data-session="${sid}"][data-seq]`).waitFor();
    await page.locator(`#session .tree-host[data-entries="1"]`).waitFor();
    await expect.poll(() => page.locator("#watch-status").textContent()).toBe("open");

    await page.evaluate("window.__hold = true; for (const socket of window.__sockets) socket.close(4321, 'test: dropped')");
    await expect.poll(() => page.locator("#watch-status").textContent()).toMatch(/reconnecting|connecting/);
    const second = await appendNote(sid, 2);
    const third = await appendNote(sid, 3);
    await page.evaluate("window.__hold = false");
    await expect.poll(() => page.locator("#watch-status").textContent(), { timeout: 30_000 }).toBe("open");
    // The lane's fold has the new tip (the snapshot after the reconnect)…
    await expect.poll(() => page.locator("#lane [data-tip]").getAttribute("data-tip")).toBe(third);
    // …and the tree draws the entries written meanwhile.
    await expect
      .poll(async () => ({ drawn: await page.locator("#session .tree-host").getAttribute("data-entries"), second: await page.locator(`svg.tree g[data-entry="${second}"]`).count() }), { timeout: 10_000 })
      .toEqual({ drawn: "3", second: 1 });
    await context.close();
  }, 120_000);

  it("keeps showing the session opened last when a tree refresh of the previous one is still in flight", async () => {
    const a = "race-a";
    const b = "race-b";
    await sessionWithEntry(a, "Race A");
    await sessionWithEntry(b, "Race B");
    const { context, page } = await openPage();
    await page.locator(`button.session-row[data-session="${a}"]`).click();
    await page.locator(`#lane[data-session="${a}"][data-seq]`).waitFor();
    await expect.poll(() => page.locator("#session-title").textContent()).toBe("Race A");

    // From now on GET /v1/sessions/race-a answers only when released: a slow network, made certain.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let held = 0;
    await page.route((url) => url.pathname === `/v1/sessions/${a}`, async (route) => {
      held += 1;
      await gate;
      await route.continue();
    });
    // A write on A's watched lane: the page reads A's tree again 250 ms later (held above).
    await appendNote(a, 2);
    await expect.poll(() => held).toBeGreaterThan(0);
    // Meanwhile the user opens B.
    await page.locator(`button.session-row[data-session="${b}"]`).click();
    await page.locator(`#lane[data-session="${b}"][data-seq]`).waitFor();
    await expect.poll(() => page.locator("#session-title").textContent()).toBe("Race B");
    release();
    await page.waitForTimeout(2_000);
    expect({
      title: await page.locator("#session-title").textContent(),
      lane: await page.locator("#lane").getAttribute("data-session"),
    }).toEqual({ title: "Race B", lane: b });
    await context.close();
  }, 120_000);

  it("shows the page last asked for when an earlier page's answer arrives late (Newer, then Older)", async () => {
    // More than two pages (20 each): Older stays enabled on page 2.
    for (let index = 0; index < 41; index++) await api.expect(201, "POST", "/v1/sessions", { body: { id: `race-paged-${index}` } });
    const newest = (await api.expect<{ items: { id: string }[] }>(200, "GET", "/v1/sessions?order=desc&limit=21")).items.map((row) => row.id);
    const { context, page } = await openPage();
    const firstRow = page.locator("ul.sessions button.session-row").first();
    const label = page.locator("#sessions .pager span");
    await expect.poll(() => firstRow.getAttribute("data-session")).toBe(newest[0]);
    await page.getByRole("button", { name: "Older" }).click();
    await expect.poll(() => firstRow.getAttribute("data-session")).toBe(newest[20]);

    // The first page's answer (no cursor) is slow this time; the second page's is not.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let held = 0;
    await page.route((url) => url.pathname === "/v1/sessions" && !url.searchParams.has("cursor"), async (route) => {
      held += 1;
      await gate;
      await route.continue();
    });
    await page.getByRole("button", { name: "Newer" }).click();
    await expect.poll(() => held).toBeGreaterThan(0);
    await page.getByRole("button", { name: "Older" }).click();
    await expect.poll(() => label.textContent()).toBe("Page 2");
    release();
    await page.waitForTimeout(2_000);
    // The user's last press asked for page 2: the label and the rows are both page 2's…
    const afterRelease = { label: await label.textContent(), first: await firstRow.getAttribute("data-session") };
    // …and Older from there shows page 3, not page 2's rows again.
    await page.getByRole("button", { name: "Older" }).click();
    await page.waitForTimeout(1_500);
    const third = (await api.expect<{ items: { id: string }[] }>(200, "GET", "/v1/sessions?order=desc&limit=41")).items.map((row) => row.id)[40];
    const afterOlder = { label: await label.textContent(), first: await firstRow.getAttribute("data-session") };
    expect({ afterRelease, afterOlder }).toEqual({ afterRelease: { label: "Page 2", first: newest[20] }, afterOlder: { label: "Page 3", first: third } });
    await context.close();
  }, 120_000);

  it("watches one lane at a time when a session is opened twice while the model list loads", async () => {
    const sid = "race-double-open";
    await sessionWithEntry(sid, "Double open");
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    await context.addInitScript(SOCKET_SPY);
    const page = await context.newPage();
    // GET /v1/models is slow this time (the page reads it once, on the first lane it opens).
    await page.route((url) => url.pathname === "/v1/models", async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await route.continue();
    });
    await page.goto(`${server.baseUrl}/inspector`);
    await page.getByLabel("Tenant API key").fill(key);
    await page.getByRole("button", { name: "Open" }).click();
    const row = page.locator(`button.session-row[data-session="${sid}"]`);
    await row.click();
    await page.waitForTimeout(300);
    await row.click();
    await page.locator(`#lane[data-session="${sid}"][data-seq]`).waitFor();
    await page.waitForTimeout(2_000);
    // Open sockets (readyState 0 or 1) the page holds: one watch.
    expect(await page.evaluate("window.__sockets.filter((socket) => socket.readyState <= 1).length")).toBe(1);
    await context.close();
  }, 120_000);
});
