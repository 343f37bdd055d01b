import { describe, expect, it } from "vitest";
import { toolUrlProblem } from "../../tools/tool-url.ts";

// Where an http tool may send its calls: https anywhere; plain http only to the loopback hosts,
// and only where the deployment allows loopback URLs (local development).

describe("http tool URLs", () => {
  it("https is allowed anywhere, with or without loopback URLs", () => {
    for (const allowLoopback of [false, true]) {
      expect(toolUrlProblem("https://tools.example.com/lookup?x=1", allowLoopback)).toBeUndefined();
      expect(toolUrlProblem("https://127.0.0.1:8443/hook", allowLoopback)).toBeUndefined();
    }
  });

  it("plain http reaches localhost, 127.0.0.1 and [::1] only where loopback URLs are allowed", () => {
    for (const url of ["http://localhost:8080/hook", "http://127.0.0.1:9/hook", "http://[::1]:8080/hook", "http://LOCALHOST/hook"]) {
      expect(toolUrlProblem(url, true)).toBeUndefined();
      expect(toolUrlProblem(url, false)).toBe("url must use https");
    }
  });

  it("plain http to any other host is refused, including names that merely start like a loopback host", () => {
    for (const url of ["http://tools.example.com/hook", "http://127.0.0.1.example.com/hook", "http://localhost.example.com/", "http://10.0.0.1/hook", "http://127.0.0.2/hook"]) {
      expect(toolUrlProblem(url, true)).toBe("url must use https (plain http only to localhost, 127.0.0.1 or [::1])");
    }
  });

  it("other schemes, relative URLs and URLs carrying credentials are refused", () => {
    expect(toolUrlProblem("ftp://127.0.0.1/hook", true)).toMatch(/^url must use https/);
    expect(toolUrlProblem("ws://localhost/hook", true)).toMatch(/^url must use https/);
    expect(toolUrlProblem("/hook", true)).toBe("url must be an absolute URL");
    expect(toolUrlProblem("https://user:pass@tools.example.com/hook", false)).toBe("url may not carry credentials");
    expect(toolUrlProblem("https://token@tools.example.com/hook", false)).toBe("url may not carry credentials");
  });
});
