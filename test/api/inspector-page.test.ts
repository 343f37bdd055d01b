import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";

// The Inspector page (docs/inspector.md) served by the worker itself: its three files, each with
// the page's security headers and one validator, and nothing else under its path. If-None-Match is
// compared as RFC 9110 §13.1.2 says: weakly (Cloudflare's edge turns the strong ETag into `W/"…"`
// when it compresses the answer, and the browser revalidates with that form), as a list, or `*`.

const FILES = [
  { path: "/inspector", type: /^text\/html/, holds: "<title>Inspector" },
  { path: "/inspector/inspector.js", type: /^text\/javascript/, holds: "sessionStorage" },
  { path: "/inspector/inspector.css", type: /^text\/css/, holds: "{" },
];

describe("GET /inspector", () => {
  it.each(FILES)("serves $path with the page's headers, no key needed", async ({ path, type, holds }) => {
    const response = await call(path);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(type);
    expect(await response.text()).toContain(holds);
    const csp = response.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("referrer-policy")).toBe("no-referrer");
    expect(response.headers.get("cache-control")).toBe("no-cache");
  });

  it("answers 304 with no body to a browser revalidating the same build", async () => {
    const etag = (await call("/inspector")).headers.get("etag");
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    for (const { path } of FILES) {
      const again = await call(path, { headers: { "if-none-match": etag ?? "" } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe("");
      const stale = await call(path, { headers: { "if-none-match": '"an-older-build"' } });
      expect(stale.status).toBe(200);
    }
  });

  it("answers 304 to the weak form of the current ETag, to a list naming it, and to *", async () => {
    const etag = (await call("/inspector")).headers.get("etag") ?? "";
    expect(etag).not.toBe("");
    for (const { path } of FILES) {
      for (const header of [`W/${etag}`, `"an-older-build", ${etag}`, `W/"an-older-build",W/${etag}`, "*"]) {
        const again = await call(path, { headers: { "if-none-match": header } });
        expect({ path, header, status: again.status }).toEqual({ path, header, status: 304 });
      }
      const stale = await call(path, { headers: { "if-none-match": `W/"an-older-build", "another"` } });
      expect({ path, status: stale.status }).toEqual({ path, status: 200 });
    }
  });

  it("names the script and style it loads, and serves no other file", async () => {
    const html = await (await call("/inspector")).text();
    expect(html).toContain('src="/inspector/inspector.js"');
    expect(html).toContain('href="/inspector/inspector.css"');
    expect((await call("/inspector/other.js")).status).toBe(404);
    const posted = await call("/inspector", { method: "POST", body: {} });
    expect(posted.status).toBe(405);
    expect(posted.headers.get("allow")).toBe("GET, HEAD");
  });
});
