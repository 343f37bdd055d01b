import { describe, expect, it } from "vitest";
import { UNCOMPRESSED_BELOW_BYTES } from "../../worker/middleware/small-answers.ts";
import { call } from "./helpers.ts";
import { tenantWithSession } from "./session-helpers.ts";

// JSON answers under 1 KiB say `Content-Encoding: identity`, so the platform's compression leaves
// them as they are (worker/middleware/small-answers.ts); larger ones and other content types are
// answered as before, intact, for the platform to compress for clients that accept it.

const GZIP = { "accept-encoding": "gzip, br" };

describe("answer encoding", () => {
  it("marks small JSON answers identity, success and error alike, with their bodies intact", async () => {
    const health = await call("/health", { headers: GZIP });
    expect(health.headers.get("content-encoding")).toBe("identity");
    expect(await health.json()).toEqual({ status: "ok" });

    const { key, base } = await tenantWithSession("enc");
    const missing = await call(`${base}/values/app/absent`, { token: key, headers: GZIP });
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-encoding")).toBe("identity");
    expect(missing.headers.get("x-request-id")).toBeTruthy();
    expect(await missing.json()).toMatchObject({ error: { code: "NotFound" } });

    const put = await call(`${base}/values/app/small`, { method: "PUT", body: { note: "short" }, token: key, headers: GZIP });
    expect(put.status).toBe(200);
    expect(put.headers.get("content-encoding")).toBe("identity");
  });

  it("leaves large JSON answers unmarked, with their bodies intact", async () => {
    const { key, base } = await tenantWithSession("enc-large");
    const text = "w".repeat(64 * 1024);
    expect((await call(`${base}/values/app/large`, { method: "PUT", body: { text }, token: key })).status).toBe(200);
    const read = await call(`${base}/values/app/large`, { token: key, headers: GZIP });
    expect(read.status).toBe(200);
    expect(read.headers.get("content-encoding")).toBeNull();
    const body = await read.json<{ value: { text: string } }>();
    expect(body.value.text).toBe(text);

    const spec = await call("/openapi.json", { headers: GZIP });
    expect(spec.headers.get("content-encoding")).toBeNull();
    const bytes = (await spec.arrayBuffer()).byteLength;
    expect(bytes).toBeGreaterThan(UNCOMPRESSED_BELOW_BYTES);
  });

  it("answers an answer of exactly the bound unmarked, and one byte under it marked", async () => {
    const { key, base } = await tenantWithSession("enc-bound");
    // {"value":{"t":"…"},"seq":N}: find the padding that lands the answer on the bound.
    const sizeWith = async (pad: number): Promise<{ size: number; encoding: string | null }> => {
      await call(`${base}/values/app/edge`, { method: "PUT", body: { t: "p".repeat(pad) }, token: key });
      const read = await call(`${base}/values/app/edge`, { token: key, headers: GZIP });
      return { size: (await read.arrayBuffer()).byteLength, encoding: read.headers.get("content-encoding") };
    };
    const probe = await sizeWith(0);
    const under = await sizeWith(UNCOMPRESSED_BELOW_BYTES - 1 - probe.size);
    expect(under).toEqual({ size: UNCOMPRESSED_BELOW_BYTES - 1, encoding: "identity" });
    const at = await sizeWith(UNCOMPRESSED_BELOW_BYTES - probe.size);
    expect(at).toEqual({ size: UNCOMPRESSED_BELOW_BYTES, encoding: null });
  });

  it("leaves answers that are not JSON alone", async () => {
    const page = await call("/inspector", { headers: GZIP });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("content-encoding")).toBeNull();
  });
});
