import { describe, expect, it } from "vitest";
import { adminToken, call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// Validation errors speak the API's language (ARCHITECTURE D16): they name the body field, query
// parameter or path parameter at fault in plain words; the validator's own phrases ("Expected
// never", "Expected Object but received Object", a root called "(body)") never reach a user. A
// known path called with a method it does not serve is 405 with `Allow`.

type ErrorBody = { error: { code: string; message: string; details?: { issues?: string[] } } };

const VALIDATOR_WORDS = [/expected never/i, /Expected Object but received Object/, /\(body\)/, /Invalid key:/, /Invalid type:/];

async function refusal(response: Response): Promise<{ status: number; code: string; message: string; issues: string[] }> {
  const body = await response.json<ErrorBody>();
  return { status: response.status, code: body.error.code, message: body.error.message, issues: body.error.details?.issues ?? [] };
}

function expectApiWords(found: { message: string; issues: string[] }, label: string): void {
  for (const text of [found.message, ...found.issues]) {
    for (const word of VALIDATOR_WORDS) expect({ label, text, leaks: word.test(text) }).toEqual({ label, text, leaks: false });
  }
}

describe("validation messages", () => {
  it("a message without timestamp is accepted on every input route: the server stamps it", async () => {
    const setup = await laneSetup("stamp");
    const before = Date.now();
    const message = { role: "user", content: "no timestamp" };
    expect((await call(`${setup.sessionPath}/branches`, { body: { name: "plain", at: null }, token: setup.key })).status).toBe(201);
    const routes: [string, unknown][] = [
      [`${setup.sessionPath}/branches/plain/entries`, { message }],
      [`${setup.lanePath}/entries`, { message }],
      [`${setup.lanePath}/queue`, { kind: "nextRun", message }],
    ];
    for (const [path, body] of routes) {
      const response = await call(path, { body, token: setup.key });
      expect({ path, status: response.status, body: response.status === 201 ? "" : await response.text() }).toEqual({ path, status: 201, body: "" });
    }
    const entries = await (await call(`${setup.sessionPath}/entries?type=message`, { token: setup.key })).json<{ items: { message: { content: string; timestamp: number } }[] }>();
    const stamped = entries.items.filter((entry) => entry.message.content === "no timestamp");
    expect(stamped.length).toBeGreaterThanOrEqual(2);
    for (const entry of stamped) expect(entry.message.timestamp).toBeGreaterThanOrEqual(before);
    const prompted = await call(`${setup.lanePath}/prompt`, { body: { prompt: [message], wait: 10 }, token: setup.key });
    expect(prompted.status).toBe(200);
  });

  it("path-parameter errors name the parameter", async () => {
    const setup = await laneSetup("pathparams");
    const cases: [string, string][] = [
      ["/v1/sessions/bad:id/entries", "sid"],
      ["/v1/sessions/bad:id", "sid"],
      [`${setup.sessionPath}/lanes/bad:lane`, "lane"],
      [`${setup.sessionPath}/lanes`.replace(setup.sid, "bad:id"), "sid"],
      [`${setup.sessionPath}/entries/bad:entry`, "entryId"],
      [`${setup.sessionPath}/branches/bad:name/entries`, "name"],
      [`${setup.lanePath}/operations/bad:op`, "opId"],
      [`${setup.sessionPath}/values/${"n".repeat(300)}/k`, "namespace"],
    ];
    for (const [path, parameter] of cases) {
      const found = await refusal(await call(path, { token: setup.key }));
      expect({ path, status: found.status, code: found.code, names: found.message.startsWith(`${parameter}: `) }).toEqual({ path, status: 400, code: "ValidationFailed", names: true });
      expectApiWords(found, path);
    }
  });

  it("body errors name the field in plain words: unknown fields, missing fields, wrong types, either-or shapes", async () => {
    const setup = await laneSetup("bodywords");
    expect((await call(`${setup.sessionPath}/branches`, { body: { name: "plain", at: null }, token: setup.key })).status).toBe(201);
    const entries = `${setup.sessionPath}/branches/plain/entries`;
    const cases: [string, string, string, unknown, RegExp][] = [
      ["unknown field", "POST", `${setup.sessionPath}/branches`, { name: "b2", at: null, colour: "red" }, /^colour: unknown field/],
      ["either-or, neither", "POST", entries, {}, /^message: required/],
      ["either-or, unknown field", "POST", entries, { message: { role: "user", content: "x" }, extra: 1 }, /^extra: unknown field/],
      ["either-or, deep error", "POST", entries, { message: { role: "user", content: 5 } }, /^message\.content: /],
      ["either-or, wrong role", "POST", entries, { message: { role: "robot", content: "x" } }, /^message\.role: must be one of "user", /],
      ["wrong type", "PUT", `${setup.sessionPath}/entries/x/label`, { label: 5 }, /^label: expected a string, got 5/],
      ["string or message", "POST", `${setup.lanePath}/queue`, { kind: "steer", message: { role: "user" } }, /^message\.content: required/],
      ["an array for an object", "PUT", setup.lanePath, [], /^body: expected an object, got an array/],
      ["missing", "POST", `${setup.sessionPath}/branches`, { at: null }, /^name: required/],
      ["too long", "PUT", `${setup.sessionPath}/entries/x/label`, { label: "l".repeat(1001) }, /^label: must have at most 1000 characters/],
    ];
    for (const [label, method, path, body, pattern] of cases) {
      const found = await refusal(await call(path, { method, body, token: setup.key }));
      expect({ label, status: found.status, message: found.message, matches: pattern.test(found.message) }).toEqual({ label, status: 400, message: found.message, matches: true });
      expectApiWords(found, label);
    }
  });

  it("checks made past the schemas (in the objects, on headers, on the JSON itself) answer in the same form: `<where>: <what>` and details.issues", async () => {
    const setup = await laneSetup("pastschema");
    const http = (url: string) => ({ kind: "http", description: "d", parameters: { type: "object" }, url });
    const cases: [string, Promise<Response>, string, Record<string, string>?][] = [
      ["body not JSON", call(`${setup.sessionPath}/branches`, { rawBody: "{nope", headers: { "content-type": "application/json" }, token: setup.key }), "body: not valid JSON"],
      ["Idempotency-Key", call(`${setup.sessionPath}/branches`, { body: { name: "b", at: null }, headers: { "idempotency-key": "has space" }, token: setup.key }), "Idempotency-Key: must be 1–255 printable ASCII characters"],
      ["tool url", call(`${setup.sessionPath}/tools/lookup`, { method: "PUT", body: http("http://tools.example.com/"), token: setup.key }), "url: url must use https", { field: "url", tool: "lookup" }],
      ["tool parameters", call(`${setup.sessionPath}/tools/lookup`, { method: "PUT", body: { kind: "client", description: "d", parameters: { type: "object", properties: { a: { type: "nonsense" } } } }, token: setup.key }), "parameters: parameters is not a valid JSON Schema", { field: "parameters", tool: "lookup" }],
      ["tool at creation", call("/v1/sessions", { body: { id: "refused_tools", tools: { lookup: http("http://tools.example.com/") } }, token: setup.key }), "tools.lookup.url: url must use https", { field: "url", tool: "lookup" }],
      ["MCP server url", call(`${setup.sessionPath}/mcp-servers/docs`, { method: "PUT", body: { url: "http://mcp.example.com/" }, token: setup.key }), "url: url must use https", { field: "url", server: "docs" }],
      ["tenant-side cursor", call("/v1/admin/tenants?cursor=nope", { token: adminToken() }), "cursor: Invalid cursor"],
      ["scripted step", call(`${setup.sessionPath}/lists/scripted/steps`, { body: { text: "late", delayMs: 3_600_000 }, token: setup.key }), "scripted/steps: text step: delayMs: must be at most 600000 ms (10 minutes)"],
    ];
    for (const [label, pending, start, details] of cases) {
      const response = await pending;
      const body = await response.json<ErrorBody & { error: { details?: Record<string, unknown> } }>();
      expect({ label, status: response.status, code: body.error.code }).toEqual({ label, status: 400, code: "ValidationFailed" });
      expect({ label, message: body.error.message.startsWith(start) }).toEqual({ label, message: true });
      expect({ label, issues: body.error.details?.issues }).toEqual({ label, issues: [body.error.message] });
      if (details) expect(body.error.details).toMatchObject(details);
    }
    // Nothing was written by any of them.
    const tools = await (await call(`${setup.sessionPath}/tools`, { token: setup.key })).json<{ items: unknown[]; mcpServers: unknown[] }>();
    expect(tools).toMatchObject({ items: [], mcpServers: [] });
    expect((await call("/v1/sessions/refused_tools", { token: setup.key })).status).toBe(404);
    const branches = await (await call(`${setup.sessionPath}/branches`, { token: setup.key })).json<{ items: { name: string }[] }>();
    expect(branches.items.map((branch) => branch.name)).toEqual(["main"]);
  });

  it("a known path with a method it does not serve is 405 with Allow; an unknown path stays 404", async () => {
    const setup = await laneSetup("methods");
    const cases: [string, string, string][] = [
      ["DELETE", `${setup.sessionPath}/entries`, "GET, HEAD"],
      ["PATCH", "/v1/me", "GET, HEAD"],
      ["POST", `${setup.lanePath}`, "GET, HEAD, PUT"],
      ["GET", `${setup.lanePath}/prompt`, "POST"],
      ["PUT", `${setup.sessionPath}/lists/app/k`, "GET, HEAD, POST, DELETE"],
    ];
    for (const [method, path, allow] of cases) {
      const response = await call(path, { method, token: setup.key, ...(method === "GET" ? {} : { rawBody: "{}" }) });
      const found = await refusal(response);
      expect({ method, path, status: found.status, code: found.code, allow: response.headers.get("allow") }).toEqual({ method, path, status: 405, code: "MethodNotAllowed", allow });
    }
    expect((await refusal(await call(`${setup.sessionPath}/nope`, { token: setup.key }))).status).toBe(404);
  });
});
