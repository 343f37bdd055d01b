import { beforeAll, describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { makeResources, type Resources } from "./route-fixtures.ts";

// QUALITY R3: test/api/fuzz.test.ts mutates only the query parameters that
// fuzz-generators.ts BAD_QUERY names (limit, cursor, wait, order, type, …) and `metadata.*`. The
// documented parameters `after` and `heartbeat` (GET …/lanes/{lane}/events), `batch` (both watch
// sockets), and `status`, `createdAfter`, `createdBefore`, `agent` (GET /v1/sessions, session
// search) get no generated case, nor does the `Last-Event-ID` header of the SSE stream. These are
// the cases to fold into BAD_QUERY: each must be a documented 400 ValidationFailed (never a 5xx),
// and a garbled Last-Event-ID only costs a fresh snapshot (200 stream).

let r: Resources;
beforeAll(async () => {
  r = await makeResources("fuzz_q");
}, 60_000);

const BAD: Record<string, { path: (r: Resources) => string; headers?: Record<string, string>; values: string[] }> = {
  after: { path: (x) => `/v1/sessions/${x.sid}/lanes/main/events`, values: ["x".repeat(65), "a&after=b"] },
  heartbeat: { path: (x) => `/v1/sessions/${x.sid}/lanes/main/events`, values: ["0", "61", "-1", "1.5", "01", "abc", "", "1e1", "１"] },
  batch: { path: (x) => `/v1/sessions/${x.sid}/lanes/main/watch`, headers: { upgrade: "websocket" }, values: ["maybe", "", "TRUE", "1", "yes"] },
  status: { path: () => "/v1/sessions", values: ["busy", "", "IDLE", "active,idle"] },
  createdAfter: { path: () => "/v1/sessions", values: ["abc", "-1", "1.5", "1e3", "", "1".repeat(16), " 1"] },
  createdBefore: { path: () => "/v1/sessions", values: ["abc", "-1", "1.5", "1e3", "", "1".repeat(16)] },
  agent: { path: () => "/v1/sessions", values: ["a b", "a@0", "a@", "@1", "a@1@2", "x".repeat(65), "a@1234567890", "a:b"] },
};

async function status(response: Response): Promise<{ status: number; code?: string }> {
  if (response.webSocket) {
    response.webSocket.accept();
    response.webSocket.close(1000);
    return { status: response.status };
  }
  if (response.headers.get("content-type")?.includes("text/event-stream")) {
    await response.body?.cancel();
    return { status: response.status };
  }
  const text = await response.text();
  try {
    return { status: response.status, code: JSON.parse(text).error?.code };
  } catch {
    return { status: response.status, code: `not JSON: ${text.slice(0, 80)}` };
  }
}

describe("query parameters the fuzz does not mutate", () => {
  it("malformed after, heartbeat, batch, status, createdAfter, createdBefore and agent answer 400 ValidationFailed", async () => {
    const problems: string[] = [];
    for (const [name, { path, headers, values }] of Object.entries(BAD)) {
      for (const value of values) {
        const query = value.includes("&") ? `${name}=${value}` : `${name}=${encodeURIComponent(value)}`;
        const got = await status(await call(`${path(r)}?${query}`, { token: r.key, headers: headers ?? {} }));
        if (got.status !== 400 || got.code !== "ValidationFailed") problems.push(`${name}=${value.slice(0, 20)}: ${JSON.stringify(got)}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("a garbled or foreign Last-Event-ID (or ?after=) is never refused: the stream starts (with a snapshot)", async () => {
    const problems: string[] = [];
    const events = `/v1/sessions/${r.sid}/lanes/main/events`;
    for (const id of ["garbage", "000000000000.9007199254740991", "ffffffffffff.99999999999999999", "\u00e9", " ", "x".repeat(4000), "000000000000.-1"]) {
      const header = await status(await call(events, { token: r.key, headers: { "last-event-id": encodeURIComponent(id) === id ? id : encodeURIComponent(id) } }));
      if (header.status !== 200) problems.push(`Last-Event-ID ${id.slice(0, 20)}: ${JSON.stringify(header)}`);
    }
    for (const after of ["garbage", "000000000000.9007199254740991", "%00"]) {
      const query = await status(await call(`${events}?after=${after}`, { token: r.key }));
      if (query.status !== 200) problems.push(`after=${after}: ${JSON.stringify(query)}`);
    }
    expect(problems).toEqual([]);
  });
});
