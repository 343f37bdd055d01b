import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_BODY_BYTES } from "../../worker/validate.ts";
import { call } from "./helpers.ts";
import { expectError, tenantWithSession } from "./session-helpers.ts";

// Request bodies are bounded while they are read (ARCHITECTURE D17, QUALITY R7): the reader
// counts the bytes that actually arrive and stops at the bound, so neither a chunked body without
// Content-Length nor a Content-Length that lies can make the worker buffer more than the bound.

const CHUNK = 64 * 1024;

/**
 * A request body produced on demand, `total` bytes of a JSON string, that records how many bytes
 * the server pulled and whether it cancelled the upload.
 */
function meteredBody(total: number) {
  const seen = { pulled: 0, cancelled: false };
  const chunk = new TextEncoder().encode("x".repeat(CHUNK));
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (seen.pulled === 0) {
          controller.enqueue(new TextEncoder().encode("\""));
          seen.pulled += 1;
          return;
        }
        if (seen.pulled >= total) {
          controller.enqueue(new TextEncoder().encode("\""));
          controller.close();
          return;
        }
        controller.enqueue(chunk);
        seen.pulled += chunk.byteLength;
      },
      cancel() {
        seen.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, seen };
}

function put(path: string, key: string, body: ReadableStream<Uint8Array> | string, headers: Record<string, string> = {}): Promise<Response> {
  return exports.default.fetch(`http://api.test${path}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body,
  });
}

describe("request body bounds", () => {
  it("answers a chunked body far beyond the bound with 413 after reading little more than the bound, and writes nothing", async () => {
    const { key, base } = await tenantWithSession("bodychunked");
    const total = 32 * MAX_BODY_BYTES;
    const { stream, seen } = meteredBody(total);
    const response = await put(`${base}/values/app/big`, key, stream);
    await expectError(response, 413, "PayloadTooLarge");
    expect(seen.pulled).toBeLessThan(2 * MAX_BODY_BYTES);
    expect(seen.pulled).toBeGreaterThan(MAX_BODY_BYTES);
    await expectError(await call(`${base}/values/app/big`, { token: key }), 404, "NotFound");
  });

  it("counts the bytes that arrive, not the bytes a Content-Length header promises", async () => {
    const { key, base } = await tenantWithSession("bodylying");
    const body = JSON.stringify("y".repeat(2 * MAX_BODY_BYTES));
    const { stream } = meteredBody(4 * MAX_BODY_BYTES);
    for (const [label, request] of [
      ["a string body", put(`${base}/values/app/lying`, key, body, { "content-length": "16" })],
      ["a streamed body", put(`${base}/values/app/lying`, key, stream, { "content-length": "16" })],
    ] as const) {
      const response = await request;
      expect({ label, status: response.status }).toEqual({ label, status: 413 });
      expect(await response.json()).toMatchObject({ error: { code: "PayloadTooLarge", details: { limit: MAX_BODY_BYTES } } });
    }
    await expectError(await call(`${base}/values/app/lying`, { token: key }), 404, "NotFound");
  });

  it("refuses a declared Content-Length above the bound before reading any of the body", async () => {
    const { key, base } = await tenantWithSession("bodydeclared");
    const { stream, seen } = meteredBody(4 * MAX_BODY_BYTES);
    const response = await put(`${base}/values/app/declared`, key, stream, { "content-length": String(4 * MAX_BODY_BYTES + 2) });
    await expectError(response, 413, "PayloadTooLarge");
    expect(seen.pulled).toBeLessThan(MAX_BODY_BYTES);
  });

  it("accepts a chunked body right at the bound, byte for byte", async () => {
    const { key, base } = await tenantWithSession("bodyexact");
    const text = JSON.stringify("é".repeat((MAX_BODY_BYTES - 2) / 2));
    expect(new TextEncoder().encode(text).byteLength).toBe(MAX_BODY_BYTES);
    const bytes = new TextEncoder().encode(text);
    // Split inside a two-byte character: the reader must decode across chunk boundaries.
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, 1001));
        controller.enqueue(bytes.slice(1001));
        controller.close();
      },
    });
    expect((await put(`${base}/values/app/exact`, key, stream)).status).toBe(200);
    const stored = await (await call(`${base}/values/app/exact`, { token: key })).json<{ value: string }>();
    expect(stored.value).toBe(JSON.parse(text));
    const over = new TextEncoder().encode(JSON.stringify("é".repeat(MAX_BODY_BYTES / 2)));
    await expectError(await put(`${base}/values/app/over`, key, new Response(over).body ?? ""), 413, "PayloadTooLarge");
  });
});
