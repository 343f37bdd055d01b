import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { MAX_SESSION_TOOLS } from "../../schema/tools.ts";
import { call, newTenant } from "./helpers.ts";
import { useScript } from "./lane-helpers.ts";
import { expectError, objectOf } from "./session-helpers.ts";
import { activate, ARGS_SCHEMA, prompt, resultTexts, settle, webhook } from "./tool-api-helpers.ts";

// `tools` in POST /v1/sessions: definitions checked exactly as PUT …/tools/{name} checks them,
// written in the session's first commit with the rest, or nothing is created at all; an http
// tool's signing secret is in the creation answer (`toolSecrets`) and nowhere else.

const lookup = (url: string) => ({ kind: "http", description: "Looks things up", parameters: ARGS_SCHEMA, url, replay: "safe" });

describe("tools at session creation", () => {
  it("creates the tools with the session; the answer carries each http tool's secret once; the listing never does", async () => {
    const { key } = await newTenant("create_tools");
    const created = await call("/v1/sessions", {
      body: { id: "with_tools", tools: { current_time: { kind: "builtin" }, lookup: lookup("https://tools.example.com/lookup"), ask_user: { kind: "client", description: "Asks", parameters: ARGS_SCHEMA } } },
      token: key,
    });
    expect(created.status).toBe(201);
    const body = await created.json<{ id: string; toolSecrets?: Record<string, string> }>();
    expect(body.id).toBe("with_tools");
    expect(Object.keys(body.toolSecrets ?? {})).toEqual(["lookup"]);
    expect(body.toolSecrets?.lookup).toMatch(/^tsk_/);
    const listed = await (await call("/v1/sessions/with_tools/tools", { token: key })).json<{ items: { name: string; kind: string; secretHint?: string }[] }>();
    expect(listed.items.map((item) => [item.name, item.kind])).toEqual([
      ["ask_user", "client"],
      ["current_time", "builtin"],
      ["lookup", "http"],
    ]);
    expect(listed.items[2]?.secretHint).toBe(`…${body.toolSecrets?.lookup?.slice(-4)}`);
    expect(JSON.stringify(listed)).not.toContain(body.toolSecrets?.lookup);
    expect((await (await call("/v1/sessions/with_tools", { token: key })).json<Record<string, unknown>>()).toolSecrets).toBeUndefined();
  });

  it("the tools are written in the session's first commit, with its name", async () => {
    const { tenantId, key } = await newTenant("create_tools_atomic");
    const created = await call("/v1/sessions", { body: { id: "atomic", name: "n", tools: { current_time: { kind: "builtin" }, fail: { kind: "builtin" } } }, token: key });
    expect(created.status).toBe(201);
    const rows = await runInDurableObject(objectOf(tenantId, "atomic"), (_instance: SessionObject, state) =>
      state.storage.sql.exec<{ namespace: string; seq: number }>("SELECT namespace, seq FROM vals ORDER BY seq").toArray(),
    );
    expect(rows).toEqual([
      { namespace: "pi.session.name", seq: 1 },
      { namespace: "pi.tools", seq: 2 },
      { namespace: "pi.tools", seq: 3 },
    ]);
  });

  it("refuses a bad definition as PUT …/tools/{name} would, and creates nothing", async () => {
    const { key } = await newTenant("create_tools_bad");
    const attempts: [unknown, number, string][] = [
      [{ nope: { kind: "builtin" } }, 422, "UnknownTool"],
      [[], 400, "ValidationFailed"],
      [[{ kind: "builtin" }], 400, "ValidationFailed"],
      [{ "bad name!": { kind: "builtin" } }, 400, "ValidationFailed"],
      [{ x: { kind: "client", description: "d", parameters: { type: "object", properties: { a: { type: "nonsense" } } } } }, 400, "ValidationFailed"],
      [{ x: lookup("http://tools.example.com/") }, 400, "ValidationFailed"],
      [{ x: { kind: "http", description: "d", parameters: ARGS_SCHEMA } }, 400, "ValidationFailed"],
      [Object.fromEntries(Array.from({ length: MAX_SESSION_TOOLS + 1 }, (_, i) => [`t${i}`, { kind: "builtin" }])), 400, "ValidationFailed"],
    ];
    for (const [tools, status, code] of attempts) {
      await expectError(await call("/v1/sessions", { body: { id: "refused", tools }, token: key }), status, code);
      await expectError(await call("/v1/sessions/refused", { token: key }), 404, "SessionNotFound");
    }
    const listed = await (await call("/v1/sessions", { token: key })).json<{ items: unknown[] }>();
    expect(listed.items).toEqual([]);
  });

  it("a replay of the creation (same Idempotency-Key) answers the session without the secret", async () => {
    const { key } = await newTenant("create_tools_replay");
    const request = { body: { id: "replayed", tools: { lookup: lookup("https://tools.example.com/lookup") } }, token: key, headers: { "idempotency-key": "create-once" } };
    const first = await call("/v1/sessions", request);
    expect(first.status).toBe(201);
    const secret = (await first.json<{ toolSecrets: Record<string, string> }>()).toolSecrets.lookup;
    expect(secret).toMatch(/^tsk_/);
    const again = await call("/v1/sessions", request);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    const replayed = await again.text();
    expect(replayed).not.toContain(secret);
    expect(JSON.parse(replayed)).toMatchObject({ id: "replayed" });
  });

  it("an http tool created with the session signs its calls with the secret the creation answered", async () => {
    const { tenantId, key } = await newTenant("create_tools_http");
    const hook = webhook("create_tools_http");
    const created = await call("/v1/sessions", { body: { id: "hooked", tools: { lookup: lookup(hook.hookUrl("echo")) } }, token: key });
    expect(created.status).toBe(201);
    await hook.trust("echo", (await created.json<{ toolSecrets: Record<string, string> }>()).toolSecrets.lookup ?? "");
    expect((await call("/v1/sessions/hooked/lanes/main", { method: "PUT", token: key })).status).toBe(201);
    const setup = { tenantId, sid: "hooked", key, lanePath: "/v1/sessions/hooked/lanes/main" };
    await useScript(setup, [{ toolCalls: [{ name: "lookup", arguments: { question: "q" } }] }, { text: "done" }]);
    await activate(setup, ["lookup"]);
    expect((await settle(setup, await prompt(setup))).status).toBe("completed");
    expect((await hook.received()).map((received) => received.signatureValid)).toEqual([true]);
    expect(await resultTexts(setup)).toEqual([{ text: 'echo {"question":"q"}', isError: false }]);
  });
});
