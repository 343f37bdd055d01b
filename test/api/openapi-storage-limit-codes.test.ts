import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { STORAGE_BUDGET_BYTES } from "../../durable-objects/sql/storage-budget.ts";
import type { OpenApiDocument } from "../../worker/openapi/document.ts";
import { call } from "./helpers.ts";
import { objectOf, tenantWithSession } from "./session-helpers.ts";

// The document names every error code a route answers: the session routes that grow a session
// answer 422 `LimitExceeded` once it is full (docs/api-sessions.md "Limits"), and list it.

let doc: OpenApiDocument;

beforeAll(async () => {
  doc = await (await call("/openapi.json")).json<OpenApiDocument>();
});

function documented(path: string, method: "put" | "post", status: number): string[] {
  return doc.paths[path]?.[method]?.responses[String(status)]?.["x-error-codes"] ?? [];
}

describe("the document names the 422 LimitExceeded the session data routes answer", () => {
  it("PUT value, POST list item, PUT label, PUT skill, PUT template, POST branch entry", async () => {
    const { tenantId, sid, key, base } = await tenantWithSession("oslc");
    expect((await call(`${base}/branches`, { body: { name: "notes", at: null }, token: key })).status).toBe(201);
    const { entryId } = await (await call(`${base}/branches/notes/entries`, { body: { customType: "n" }, token: key })).json<{ entryId: string }>();
    const requests = [
      { path: "/v1/sessions/{sid}/values/{namespace}/{key}", method: "put", url: `${base}/values/app/k`, body: 1 },
      { path: "/v1/sessions/{sid}/lists/{namespace}/{key}", method: "post", url: `${base}/lists/app/k`, body: 1 },
      { path: "/v1/sessions/{sid}/entries/{entryId}/label", method: "put", url: `${base}/entries/${entryId}/label`, body: { label: "x" } },
      { path: "/v1/sessions/{sid}/skills/{name}", method: "put", url: `${base}/skills/s`, body: { content: "x" } },
      { path: "/v1/sessions/{sid}/templates/{name}", method: "put", url: `${base}/templates/t`, body: { content: "x" } },
      { path: "/v1/sessions/{sid}/branches/{name}/entries", method: "post", url: `${base}/branches/notes/entries`, body: { customType: "n" } },
    ] as const;
    const answered: { route: string; status: number; code: string }[] = [];
    await runInDurableObject(objectOf(tenantId, sid), (_instance: object, state) => {
      Reflect.defineProperty(state.storage.sql, "databaseSize", { configurable: true, get: () => STORAGE_BUDGET_BYTES + 1 });
    });
    try {
      for (const request of requests) {
        const response = await call(request.url, { method: request.method.toUpperCase(), body: request.body, token: key });
        const code = (await response.json<{ error?: { code?: string } }>()).error?.code ?? "";
        answered.push({ route: `${request.method} ${request.path}`, status: response.status, code });
      }
    } finally {
      await runInDurableObject(objectOf(tenantId, sid), (_instance: object, state) => {
        Reflect.deleteProperty(state.storage.sql, "databaseSize");
      });
    }
    // Every refusal is a 422 LimitExceeded ...
    expect(answered.every((a) => a.status === 422 && a.code === "LimitExceeded"), JSON.stringify(answered)).toBe(true);
    // ... and each must be documented under that route's 422.
    const undocumented = requests
      .filter((request) => !documented(request.path, request.method, 422).includes("LimitExceeded"))
      .map((request) => `${request.method.toUpperCase()} ${request.path}`);
    expect(undocumented).toEqual([]);
  });
});
