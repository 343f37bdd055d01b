import { getToolName, isToolUIPart, type UIMessage } from "ai";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { serveChatPage, type ChatPageServer } from "./ai-sdk-page.ts";
import { launchChromium } from "./browser.ts";
import { Api, appendSteps, createTenant, pollUntil, readAdminToken, words, type ErrorBody } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { fencedBlocks, runShellBlocks } from "./doc-blocks.ts";

// The React example of docs/examples/ai-sdk-chat (useChat with the AI SDK's DefaultChatTransport)
// in a real browser against `npm start`, opened on its own origin with nothing but a browser token
// (watch + prompt): a streamed answer, a server tool, a client tool answered by the page's
// onToolCall, a reload mid-answer that resumes the running answer once, and at the end the page's
// conversation equals GET …/ai-sdk/messages. Scripted steps (docs/providers.md) make the answers.

const SID = "ai_sdk_page";
const OTHER_SID = "ai_sdk_other";
const AI_SDK = `/v1/sessions/${SID}/lanes/main/ai-sdk`;

/** One message as the page shows it, and as the server's UIMessage reads the same way. */
interface Shown {
  role: string;
  text: string;
  tools: string[];
}

/** The page's messages, read from its DOM (li[data-role], .text, .tool[data-tool][data-state]). */
function shownOnPage(page: Page): Promise<Shown[]> {
  return page.locator("#messages > li").evaluateAll((items) =>
    items.map((item) => ({
      role: item.getAttribute("data-role") ?? "",
      text: Array.from(item.querySelectorAll(".text"), (part) => part.textContent ?? "").join(""),
      tools: Array.from(item.querySelectorAll(".tool"), (part) => `${part.getAttribute("data-tool")}:${part.getAttribute("data-state")}`),
    })),
  );
}

/** The same view of UIMessages (static tool parts are `tool-<name>`). */
function shownFrom(messages: UIMessage[]): Shown[] {
  return messages.map((message) => ({
    role: message.role,
    text: message.parts.flatMap((part) => (part.type === "text" ? [part.text] : [])).join(""),
    tools: message.parts.flatMap((part) => (isToolUIPart(part) ? [`${getToolName(part)}:${part.state}`] : [])),
  }));
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel("Message").fill(text);
  await page.getByRole("button", { name: "Send" }).click();
}

function ready(page: Page): Promise<void> {
  return page.locator('#status[data-status="ready"]').waitFor({ timeout: 30_000 });
}

async function expectShown(page: Page, expected: Shown[]): Promise<void> {
  await expect.poll(() => shownOnPage(page), { timeout: 30_000 }).toEqual(expected);
}

describe("the useChat example page against npm start", () => {
  let chatPage: ChatPageServer;
  let server: DevServer;
  let browser: Browser;
  let api: Api;
  beforeAll(async () => {
    chatPage = await serveChatPage();
    // The page is on another origin than the API: `npm start` passes wrangler's --var through.
    server = await startDevServer({ extraArgs: ["--var", `CORS_ORIGINS:${chatPage.origin}`] });
    api = (await createTenant(new Api(server.baseUrl, readAdminToken()), "aisdk")).api;
    browser = await launchChromium();
  }, 120_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await chatPage?.close();
  });

  it("chats with a browser token only: streamed text, a server tool, a client tool, a reload mid-answer resumed once, the page equal to GET …/messages; Stop aborts the run", async () => {
    await api.expect(201, "POST", "/v1/sessions", {
      body: {
        id: SID,
        tools: {
          values_get: { kind: "builtin" },
          get_location: { kind: "client", description: "Where the user is", parameters: { type: "object", properties: {} } },
        },
      },
    });
    await api.expect(201, "PUT", `/v1/sessions/${SID}/lanes/main`, { body: { model: { provider: "scripted", modelId: "script" }, activeTools: ["values_get", "get_location"] } });
    await api.expect(200, "PUT", `/v1/sessions/${SID}/values/shop/order-42`, { body: "shipped on Monday" });
    await api.expect(201, "POST", "/v1/sessions", { body: { id: OTHER_SID } });
    await api.expect(201, "PUT", `/v1/sessions/${OTHER_SID}/lanes/main`, { body: {} });
    const { token } = await api.expect<{ token: string }>(201, "POST", `/v1/sessions/${SID}/tokens`, { body: { scopes: ["watch", "prompt"], ttlSeconds: 900 } });
    const asPage = new Api(server.baseUrl, token);

    const context = await browser.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    // What the transport asks the API, to see the client tool's result posted back and the resumption.
    const calls: string[] = [];
    page.on("response", (response) => {
      const url = new URL(response.url());
      if (url.origin === server.baseUrl && response.request().method() !== "OPTIONS") calls.push(`${response.request().method()} ${url.pathname} ${response.status()}`);
    });
    const callsSince = (from: number) => calls.slice(from);

    // Opening: GET …/messages (none yet), then the transport's resumption answers 204 (nothing runs).
    const resumed = page.waitForResponse((response) => response.url() === `${server.baseUrl}${AI_SDK}/${SID}/stream`);
    await page.goto(chatPage.url({ base: server.baseUrl, session: SID, lane: "main", token }));
    await page.locator("#status, #error").first().waitFor();
    expect(await page.locator("#error").allTextContents()).toEqual([]);
    expect((await resumed).status()).toBe(204);
    await ready(page);
    expect(calls).toEqual([`GET ${AI_SDK}/messages 200`, `GET ${AI_SDK}/${SID}/stream 204`]);

    // (a) A streamed answer.
    const greeting = { role: "assistant", text: words(12, "hello"), tools: [] };
    await appendSteps(api, SID, [{ text: greeting.text, chunkMs: 30 }]);
    let from = calls.length;
    await send(page, "Hi there");
    await expectShown(page, [{ role: "user", text: "Hi there", tools: [] }, greeting]);
    await ready(page);
    expect(callsSince(from)).toEqual([`POST ${AI_SDK} 200`]);

    // (b) The model calls a server tool (run by the service), then answers; one request.
    await api.expect(201, "POST", `/v1/sessions/${SID}/lists/scripted/steps`, { body: { toolCalls: [{ name: "values_get", arguments: { namespace: "shop", key: "order-42" } }] } });
    await appendSteps(api, SID, [{ text: "Your order shipped on Monday." }]);
    from = calls.length;
    await send(page, "Where is my order?");
    const order = [
      { role: "user", text: "Where is my order?", tools: [] },
      { role: "assistant", text: "Your order shipped on Monday.", tools: ["values_get:output-available"] },
    ];
    await expectShown(page, [{ role: "user", text: "Hi there", tools: [] }, greeting, ...order]);
    await ready(page);
    expect(await page.locator('.tool[data-tool="values_get"] .output').textContent()).toContain("shipped on Monday");
    expect(callsSince(from)).toEqual([`POST ${AI_SDK} 200`]);

    // (c) A client tool: the stream finishes while the run waits, the page's onToolCall answers, and
    // the transport posts the result back, which streams the rest of the same assistant message.
    await api.expect(201, "POST", `/v1/sessions/${SID}/lists/scripted/steps`, { body: { toolCalls: [{ name: "get_location", arguments: {} }] } });
    await appendSteps(api, SID, [{ text: "You are in Lisbon." }]);
    from = calls.length;
    await send(page, "Where am I?");
    const location = [
      { role: "user", text: "Where am I?", tools: [] },
      { role: "assistant", text: "You are in Lisbon.", tools: ["get_location:output-available"] },
    ];
    const beforeReload = [{ role: "user", text: "Hi there", tools: [] }, greeting, ...order, ...location];
    await expectShown(page, beforeReload);
    await ready(page);
    expect(await page.locator('.tool[data-tool="get_location"] .output').textContent()).toContain("Lisbon");
    expect(callsSince(from)).toEqual([`POST ${AI_SDK} 200`, `POST ${AI_SDK} 200`]);

    // (d) A reload mid-answer: the page starts from GET …/messages and the resumption replays the
    // running answer from its start and follows it live; it ends as one assistant message.
    const story = { role: "assistant", text: words(80, "story"), tools: [] };
    await appendSteps(api, SID, [{ text: story.text, chunkMs: 150 }]);
    await send(page, "Tell me a long story");
    await page.locator('#messages > li[data-role="assistant"] .text').filter({ hasText: "story3" }).waitFor({ timeout: 20_000 });
    from = calls.length;
    const reattached = page.waitForResponse((response) => response.url() === `${server.baseUrl}${AI_SDK}/${SID}/stream`);
    await page.reload();
    expect((await reattached).status()).toBe(200);
    await expectShown(page, [...beforeReload, { role: "user", text: "Tell me a long story", tools: [] }, story]);
    await ready(page);
    expect(callsSince(from)).toEqual([`GET ${AI_SDK}/messages 200`, `GET ${AI_SDK}/${SID}/stream 200`]);

    // (e) The page's conversation is the lane's.
    expect(await shownOnPage(page)).toEqual(shownFrom(await asPage.expect<UIMessage[]>(200, "GET", `${AI_SDK}/messages`)));

    // Stop aborts the lane's run (not only the page's reading): the lane goes idle with the run
    // aborted, and a reload shows what the lane kept, as GET …/messages does.
    await appendSteps(api, SID, [{ text: words(200, "endless"), chunkMs: 150 }]);
    await send(page, "Talk forever");
    await page.locator('#messages > li[data-role="assistant"] .text').filter({ hasText: "endless2" }).waitFor({ timeout: 20_000 });
    await page.getByRole("button", { name: "Stop" }).click();
    await ready(page);
    const idle = await pollUntil("the lane to be idle after Stop", async () => (await asPage.expect<{ snapshot: LaneSnapshot }>(200, "GET", `/v1/sessions/${SID}/lanes/main/snapshot`)).snapshot, (lane) => lane.operation === null);
    expect(idle.lastResult?.status).toBe("aborted");
    await page.reload();
    await page.locator("#status").waitFor();
    const served = await asPage.expect<UIMessage[]>(200, "GET", `${AI_SDK}/messages`);
    expect(shownFrom(served).slice(0, -1)).toEqual([...beforeReload, { role: "user", text: "Tell me a long story", tools: [] }, story, { role: "user", text: "Talk forever", tools: [] }]);
    await expectShown(page, shownFrom(served));
    expect(await page.locator("#error").count()).toBe(0);
    expect(problems).toEqual([]);
    await context.close();

    // The token reaches its own session only, and only with its scopes.
    for (const [method, path] of [
      ["GET", `/v1/sessions/${OTHER_SID}/lanes/main/ai-sdk/messages`],
      ["POST", `/v1/sessions/${OTHER_SID}/lanes/main/ai-sdk`],
    ] as const) {
      const refused = await asPage.request<ErrorBody>(method, path, { body: method === "POST" ? { id: OTHER_SID, messages: [], trigger: "submit-message" } : undefined });
      expect([refused.status, refused.body.error.code]).toEqual([403, "TokenScope"]);
    }
    const { token: watchOnly } = await api.expect<{ token: string }>(201, "POST", `/v1/sessions/${SID}/tokens`, { body: { scopes: ["watch"], ttlSeconds: 60 } });
    const prompt = { id: SID, trigger: "submit-message", messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "hello?" }] }] };
    const refused = await new Api(server.baseUrl, watchOnly).request<ErrorBody>("POST", AI_SDK, { body: prompt });
    expect([refused.status, refused.body.error.code]).toEqual([403, "TokenScope"]);
    expect(shownFrom(await asPage.expect<UIMessage[]>(200, "GET", `${AI_SDK}/messages`))).toEqual(shownFrom(served));
  }, 240_000);

  it("runs as its README says: the curl commands make a session and a token, the printed address opens the page, echo answers, the scripted client tool round-trips", async () => {
    const blocks = fencedBlocks("docs/examples/ai-sdk-chat/README.md", "sh");
    expect(blocks).toHaveLength(5);
    const [start, setup, build, open, script] = blocks;
    expect(start).toContain("--var CORS_ORIGINS:http://127.0.0.1:5173");
    // The build the harness does in memory (ai-sdk-page.ts) is the one the README gives.
    expect(build).toMatch(/npx esbuild docs\/examples\/ai-sdk-chat\/chat\.tsx --bundle --format=esm --jsx=automatic \\\n\s+--define:process\.env\.NODE_ENV='"production"'/);
    const { key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "aisdkdoc");
    const [, printed] = await runShellBlocks([setup ?? "", open ?? ""], { baseUrl: server.baseUrl, key });
    const address = new URL(printed ?? "");
    expect(address.origin).toBe("http://127.0.0.1:5173");
    expect(address.searchParams.get("token")).toMatch(/^bt_/);

    // The same page, from the harness's server (its origin is the one this run's CORS_ORIGINS allows).
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${chatPage.origin}/${address.search}`);
    await send(page, "Hello lane");
    await expectShown(page, [
      { role: "user", text: "Hello lane", tools: [] },
      { role: "assistant", text: "Hello lane", tools: [] },
    ]);
    await ready(page);
    await runShellBlocks([script ?? ""], { baseUrl: server.baseUrl, key });
    await send(page, "Where am I?");
    await expectShown(page, [
      { role: "user", text: "Hello lane", tools: [] },
      { role: "assistant", text: "Hello lane", tools: [] },
      { role: "user", text: "Where am I?", tools: [] },
      { role: "assistant", text: "You are in Lisbon.", tools: ["get_location:output-available"] },
    ]);
    await context.close();
  }, 120_000);
});
