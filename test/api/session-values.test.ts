import { describe, expect, it } from "vitest";
import { toWire } from "../../schema/wire.ts";
import { unwrap } from "../helpers/sessions.ts";
import { call, newTenant } from "./helpers.ts";
import { expectError, objectOf, tenantWithSession } from "./session-helpers.ts";

// Application values and lists (spec/API.md "Sessions"), through the real Hono app.

type ListPage = { items: { seq: number; value: unknown }[]; nextCursor: string | null };

describe("values", () => {
  it("PUT the JSON value itself, GET { value, seq }, DELETE; null is a value, absent is 404", async () => {
    const { key, base } = await tenantWithSession("values");
    await expectError(await call(`${base}/values/app/k`, { token: key }), 404, "NotFound");
    const put = await call(`${base}/values/app/k`, { method: "PUT", body: { a: [1, "two"] }, token: key });
    expect(put.status).toBe(200);
    const { seq } = await put.json<{ seq: number }>();
    expect(await (await call(`${base}/values/app/k`, { token: key })).json()).toEqual({ value: { a: [1, "two"] }, seq });
    expect((await call(`${base}/values/app/k`, { method: "PUT", rawBody: "null", token: key })).status).toBe(200);
    const nulled = await call(`${base}/values/app/k`, { token: key });
    expect(nulled.status).toBe(200);
    expect(await nulled.json()).toEqual({ value: null, seq: expect.any(Number) });
    for (const scalar of [0, "text", false]) {
      await call(`${base}/values/app/scalar`, { method: "PUT", body: scalar, token: key });
      expect((await (await call(`${base}/values/app/scalar`, { token: key })).json<{ value: unknown }>()).value).toEqual(scalar);
    }
    const deleted = await call(`${base}/values/app/k`, { method: "DELETE", token: key });
    expect(deleted.status).toBe(204);
    await expectError(await call(`${base}/values/app/k`, { token: key }), 404, "NotFound");
    expect((await call(`${base}/values/app/k`, { method: "DELETE", token: key })).status).toBe(204);
  });

  it("URL-decodes namespace and key segments", async () => {
    const { key, base } = await tenantWithSession("valuesenc");
    expect((await call(`${base}/values/my%20app/a%2Fb%3Fc`, { method: "PUT", body: 1, token: key })).status).toBe(200);
    expect((await (await call(`${base}/values/my%20app/a%2Fb%3Fc`, { token: key })).json<{ value: unknown }>()).value).toBe(1);
    await expectError(await call(`${base}/values/my%20app/a`, { token: key }), 404, "NotFound");
  });

  it("refuses the runtime's namespaces and malformed addresses and bodies", async () => {
    const { key, base } = await tenantWithSession("valuesbad");
    for (const namespace of ["pi", "pi.lane.state", "pi.branch.tip"]) {
      await expectError(await call(`${base}/values/${namespace}/main`, { token: key }), 400, "ReservedNamespace");
      await expectError(await call(`${base}/values/${namespace}/main`, { method: "PUT", body: 1, token: key }), 400, "ReservedNamespace");
      await expectError(await call(`${base}/values/${namespace}/main`, { method: "DELETE", token: key }), 400, "ReservedNamespace");
    }
    expect((await call(`${base}/values/pix/k`, { method: "PUT", body: 1, token: key })).status).toBe(200);
    await expectError(await call(`${base}/values/a%00b/k`, { token: key }), 400, "ValidationFailed");
    await expectError(await call(`${base}/values/app/k%00`, { token: key }), 400, "ValidationFailed");
    await expectError(await call(`${base}/values/${"n".repeat(257)}/k`, { token: key }), 400, "ValidationFailed");
    await expectError(await call(`${base}/values/app/${"k".repeat(257)}`, { token: key }), 400, "ValidationFailed");
    await expectError(await call(`${base}/values/app/k`, { method: "PUT", token: key }), 400, "ValidationFailed");
    await expectError(await call(`${base}/values/app/k`, { method: "PUT", rawBody: "{not json", token: key }), 400, "ValidationFailed");
    await expectError(await call(`${base}/values/app/k`, { method: "PUT", rawBody: "[1e999]", token: key }), 400, "ValidationFailed");
    expect((await call(`${base}/values/app/k`, { method: "PUT", rawBody: JSON.stringify("x".repeat(2 * 1024 * 1024)), token: key })).status).toBe(413);
  });

  it("is 404 for foreign and unknown sessions and 401 without a valid key", async () => {
    const { key, base, sid } = await tenantWithSession("valuesforeign");
    await call(`${base}/values/app/k`, { method: "PUT", body: "mine", token: key });
    const other = await newTenant("valuesother");
    await expectError(await call(`${base}/values/app/k`, { token: other.key }), 404, "SessionNotFound");
    await expectError(await call(`${base}/values/app/k`, { method: "PUT", body: "theirs", token: other.key }), 404, "SessionNotFound");
    await expectError(await call(`${base}/values/app/k`, { method: "DELETE", token: other.key }), 404, "SessionNotFound");
    await expectError(await call(`/v1/sessions/${sid}_x/values/app/k`, { token: key }), 404, "SessionNotFound");
    await expectError(await call(`${base}/values/app/k`), 401, "Unauthenticated");
    await expectError(await call(`${base}/values/app/k`, { method: "PUT", body: 1, token: "sk_bad" }), 401, "Unauthenticated");
    expect((await (await call(`${base}/values/app/k`, { token: key })).json<{ value: unknown }>()).value).toBe("mine");
  });
});

describe("lists", () => {
  it("POST appends one element (201 { seq }); GET pages with a cursor in either order; DELETE empties", async () => {
    const { key, base } = await tenantWithSession("lists");
    expect(await (await call(`${base}/lists/app/log`, { token: key })).json()).toEqual({ items: [], nextCursor: null });
    const seqs: number[] = [];
    for (const element of [{ n: 0 }, null, "two", [3], 4]) {
      const posted = await call(`${base}/lists/app/log`, { method: "POST", rawBody: JSON.stringify(element), token: key });
      expect(posted.status).toBe(201);
      const body = await posted.json<{ seq: number }>();
      expect(Object.keys(body)).toEqual(["seq"]);
      seqs.push(body.seq);
    }
    const values: unknown[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
      const page: ListPage = await (await call(`${base}/lists/app/log?limit=2${query}`, { token: key })).json();
      values.push(...page.items.map((item) => item.value));
      expect(page.items.every((item, i) => item.seq === seqs[pages * 2 + i])).toBe(true);
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect({ values, pages }).toEqual({ values: [{ n: 0 }, null, "two", [3], 4], pages: 3 });
    const desc = await (await call(`${base}/lists/app/log?order=desc&limit=3`, { token: key })).json<ListPage>();
    expect(desc.items.map((item) => item.value)).toEqual([4, [3], "two"]);
    const rest = await (await call(`${base}/lists/app/log?order=desc&limit=3&cursor=${desc.nextCursor}`, { token: key })).json<ListPage>();
    expect(rest).toEqual({ items: [{ seq: seqs[1], value: null }, { seq: seqs[0], value: { n: 0 } }], nextCursor: null });
    expect((await call(`${base}/lists/app/log`, { method: "DELETE", token: key })).status).toBe(204);
    expect(await (await call(`${base}/lists/app/log`, { token: key })).json()).toEqual({ items: [], nextCursor: null });
  });

  it("accepts Idempotency-Key on POST: one element for a repeated request", async () => {
    const { key, base } = await tenantWithSession("listsidem");
    const request = { method: "POST", body: { once: true }, token: key, headers: { "idempotency-key": "elem-1" } };
    const first = await call(`${base}/lists/app/log`, request);
    const second = await call(`${base}/lists/app/log`, request);
    expect([first.status, second.status, second.headers.get("idempotency-replayed")]).toEqual([201, 201, "true"]);
    expect(await second.json()).toEqual(await first.json());
    expect((await (await call(`${base}/lists/app/log`, { token: key })).json<ListPage>()).items).toHaveLength(1);
  });

  it("refuses the runtime's namespaces, bad queries and bodies (400), foreign sessions (404), bad keys (401)", async () => {
    const { key, base } = await tenantWithSession("listsbad");
    await expectError(await call(`${base}/lists/pi/x`, { token: key }), 400, "ReservedNamespace");
    await expectError(await call(`${base}/lists/pi.pending.assistant_frame/x`, { method: "POST", body: 1, token: key }), 400, "ReservedNamespace");
    await expectError(await call(`${base}/lists/pi/x`, { method: "DELETE", token: key }), 400, "ReservedNamespace");
    for (const query of ["limit=0", "limit=1001", "order=up", "cursor=bm9wZQ"]) {
      await expectError(await call(`${base}/lists/app/log?${query}`, { token: key }), 400, "ValidationFailed");
    }
    await expectError(await call(`${base}/lists/app/log`, { method: "POST", token: key }), 400, "ValidationFailed");
    await expectError(await call(`${base}/lists/app/log`, { method: "POST", rawBody: "[", token: key }), 400, "ValidationFailed");
    expect((await call(`${base}/lists/app/log`, { method: "POST", rawBody: JSON.stringify(["x".repeat(2 * 1024 * 1024)]), token: key })).status).toBe(413);
    const other = await newTenant("listsother");
    await expectError(await call(`${base}/lists/app/log`, { token: other.key }), 404, "SessionNotFound");
    await expectError(await call(`${base}/lists/app/log`, { method: "POST", body: 1, token: other.key }), 404, "SessionNotFound");
    await expectError(await call(`${base}/lists/app/log`, { method: "DELETE", token: other.key }), 404, "SessionNotFound");
    await expectError(await call(`${base}/lists/app/log`), 401, "Unauthenticated");
    await expectError(await call(`${base}/lists/app/log`, { method: "POST", body: 1, token: "garbage" }), 401, "Unauthenticated");
  });

  it("feeds the scripted model: a step appended through the API is played by scripted/script", async () => {
    const { tenantId, sid, key, base } = await tenantWithSession("liststeps");
    expect((await call(`${base}/lists/scripted/steps`, { method: "POST", body: { text: "from the list" }, token: key })).status).toBe(201);
    const stub = objectOf(tenantId, sid);
    unwrap(await stub.acquireLane("main"));
    unwrap(await stub.configureLane("main", toWire({ model: { provider: "scripted", modelId: "script" } })));
    const { operationId } = unwrap(await stub.acceptOperation("main", toWire({ kind: "prompt", prompt: "go" })));
    expect(unwrap(await stub.operation("main", operationId, 10_000))).toMatchObject({ state: "settled", result: { status: "completed" } });
    const entries = await (await call(`${base}/branches/main/entries?type=message&limit=1`, { token: key })).json<{ items: { message: { role: string; content: unknown } }[] }>();
    expect(entries.items[0]?.message).toMatchObject({ role: "assistant", content: [{ type: "text", text: "from the list" }] });
  });
});
