import { describe, expect, it } from "vitest";
import { destinationHost, egressDetails, egressProblem, hostRefusal, type AddressRule } from "../../schema/egress-policy.ts";
import { INTERNAL_URLS } from "../helpers/internal-urls.ts";

// The egress policy (schema/egress-policy.ts) over every address form the issue listed and more,
// through the runtime's own URL parser (these tests run in workerd): every refusal names its rule,
// public addresses and names pass, and local development relaxes plain http to loopback only.


function ruleOf(url: string, localDevelopment = false): AddressRule | undefined {
  return egressProblem(url, localDevelopment)?.rule;
}

describe("the egress policy refuses internal addresses", () => {
  it("refuses the whole list of the issue, with LOCAL_DEV off and on, each under its rule", () => {
    for (const [url, rule] of INTERNAL_URLS) {
      expect({ url, rule: ruleOf(url) }).toEqual({ url, rule });
      // https to loopback stays refused in local development: only plain http is relaxed.
      expect({ url, rule: ruleOf(url, true) }).toEqual({ url, rule });
    }
  });

  it("reads every IPv4 literal form as the URL parser normalizes it: decimal, octal, hex, short, trailing dot", () => {
    const loopback = ["https://2130706433/", "https://017700000001/", "https://0x7f000001/", "https://0x7f.0.0.1/", "https://0177.1/", "https://127.1/", "https://127.0.1/", "https://127.0.0.1./", "https://0X7F.00.0.01/", "https://%31%32%37.0.0.1/", "https://１２７.０.０.１/"];
    for (const url of loopback) expect({ url, rule: ruleOf(url) }).toEqual({ url, rule: "loopback" });
    expect(ruleOf("https://0/")).toBe("unspecified");
    expect(ruleOf("https://0x0a.1/")).toBe("private");
    expect(ruleOf("https://167772161/")).toBe("private");
    expect(ruleOf("https://0xa9fea9fe/")).toBe("link_local");
    expect(ruleOf("https://025177524776/")).toBe("link_local");
    // Azure's platform endpoint, in its spellings; its neighbours are public.
    for (const url of ["https://168.63.129.16/machine?comp=goalstate", "https://2822734096/", "https://[::ffff:168.63.129.16]/"]) expect({ url, rule: ruleOf(url) }).toEqual({ url, rule: "cloud_internal" });
    expect(ruleOf("https://168.63.129.17/")).toBeUndefined();
    expect(ruleOf("https://3232235777/")).toBe("private");
  });

  it("refuses every non-public IPv4 range, at both ends", () => {
    const ranges: [string, string, AddressRule][] = [
      ["0.0.0.0", "0.255.255.255", "unspecified"],
      ["10.0.0.0", "10.255.255.255", "private"],
      ["100.64.0.0", "100.127.255.255", "cgnat"],
      ["127.0.0.0", "127.255.255.255", "loopback"],
      ["169.254.0.0", "169.254.255.255", "link_local"],
      ["172.16.0.0", "172.31.255.255", "private"],
      ["192.0.0.0", "192.0.0.255", "reserved"],
      ["192.0.2.0", "192.0.2.255", "reserved"],
      ["192.88.99.0", "192.88.99.255", "reserved"],
      ["192.168.0.0", "192.168.255.255", "private"],
      ["198.18.0.0", "198.19.255.255", "benchmark"],
      ["198.51.100.0", "198.51.100.255", "reserved"],
      ["203.0.113.0", "203.0.113.255", "reserved"],
      ["224.0.0.0", "239.255.255.255", "multicast"],
      ["240.0.0.0", "255.255.255.255", "reserved"],
    ];
    for (const [first, last, rule] of ranges) {
      expect({ first, rule: hostRefusal(first)?.rule }).toEqual({ first, rule });
      expect({ last, rule: hostRefusal(last)?.rule }).toEqual({ last, rule });
    }
    // Just outside the ranges: public.
    for (const host of ["1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255", "128.0.0.0", "169.253.255.255", "172.15.255.255", "172.32.0.0", "192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255"]) {
      expect({ host, refused: hostRefusal(host) }).toEqual({ host, refused: undefined });
    }
  });

  it("refuses IPv6 loopback, unspecified, ULA, link-local, multicast, documentation and non-global forms, and IPv4 inside IPv6", () => {
    const cases: [string, AddressRule][] = [
      ["https://[::]/", "unspecified"],
      ["https://[0:0:0:0:0:0:0:1]/", "loopback"],
      ["https://[fc00::1]/", "private"],
      ["https://[FDFF:FFFF::1]/", "private"],
      ["https://[fe80::1]/", "link_local"],
      ["https://[febf::1]/", "link_local"],
      ["https://[fec0::1]/", "reserved"],
      ["https://[ff02::1]/", "multicast"],
      ["https://[2001:db8::1]/", "reserved"],
      ["https://[3fff::1]/", "reserved"],
      ["https://[100::1]/", "reserved"],
      ["https://[2001::1]/", "reserved"],
      ["https://[2001:2::1]/", "benchmark"],
      ["https://[64:ff9b:1::1]/", "private"],
      // IPv4-mapped, in every spelling the parser accepts.
      ["https://[::ffff:127.0.0.1]/", "loopback"],
      ["https://[::ffff:7f00:1]/", "loopback"],
      ["https://[0:0:0:0:0:ffff:127.0.0.1]/", "loopback"],
      ["https://[::ffff:10.1.2.3]/", "private"],
      ["https://[::ffff:169.254.169.254]/", "link_local"],
      ["https://[::ffff:0.0.0.0]/", "unspecified"],
      // IPv4-compatible (deprecated): the embedded address decides, else reserved.
      ["https://[::127.0.0.1]/", "loopback"],
      ["https://[::192.168.0.1]/", "private"],
      ["https://[::8.8.8.8]/", "reserved"],
      // NAT64 and 6to4 carry an IPv4 address too.
      ["https://[64:ff9b::7f00:1]/", "loopback"],
      ["https://[64:ff9b::a9fe:a9fe]/", "link_local"],
      ["https://[2002:7f00:1::]/", "loopback"],
      ["https://[2002:c0a8:101::1]/", "private"],
    ];
    for (const [url, rule] of cases) expect({ url, rule: ruleOf(url) }).toEqual({ url, rule });
    // Public IPv6, and public IPv4 written as mapped, NAT64 or 6to4, pass.
    for (const url of ["https://[2606:4700:4700::1111]/", "https://[2a00:1450:4001:80b::200e]/", "https://[::ffff:8.8.8.8]/", "https://[64:ff9b::808:808]/", "https://[2002:808:808::1]/"]) {
      expect({ url, problem: egressProblem(url, false) }).toEqual({ url, problem: undefined });
    }
  });

  it("refuses localhost names and internal names, in any case and with a trailing dot", () => {
    const cases: [string, AddressRule][] = [
      ["https://LOCALHOST/", "loopback"],
      ["https://LocalHost./", "loopback"],
      ["https://a.b.localhost/", "loopback"],
      ["https://localhost../", "loopback"],
      ["https://printer.local/", "internal_name"],
      ["https://PRINTER.LOCAL./", "internal_name"],
      ["https://metadata.google.internal./", "internal_name"],
      ["https://db.internal/", "internal_name"],
      ["https://router.home.arpa/", "internal_name"],
      ["https://home.arpa/", "internal_name"],
      ["https://metadata/", "internal_name"],
      ["https://intranet./", "internal_name"],
      ["https://%6c%6f%63%61%6c%68%6f%73%74/", "loopback"],
    ];
    for (const [url, rule] of cases) expect({ url, rule: ruleOf(url) }).toEqual({ url, rule });
  });

  it("accepts public addresses and names, including names that merely look internal", () => {
    for (const url of [
      "https://tools.example.com/lookup?x=1",
      "https://api.openai.com/v1",
      "https://1.1.1.1/",
      "https://93.184.215.14:8443/hook",
      "https://localhost.example.com/",
      "https://127.0.0.1.example.com/",
      "https://internal.example.com/",
      "https://local.example.com/",
      "https://example.com./",
      "https://xn--bcher-kva.example/",
      // The Workers AI binding's base URL: the binding's own fetch, and a public-looking name.
      "https://workers-binding.ai/ai-gateway/gateways/default/workers-ai/v1",
    ]) {
      expect({ url, problem: egressProblem(url, false) }).toEqual({ url, problem: undefined });
      expect({ url, problem: egressProblem(url, true) }).toEqual({ url, problem: undefined });
    }
  });

  it("names the refused host, its range and the field in the message; details carry reason and rule", () => {
    const problem = egressProblem("https://0x7f.1/hook", false);
    expect(problem).toEqual({ message: "url may not point at a loopback address: 127.0.0.1 (127.0.0.0/8)", rule: "loopback" });
    expect(problem && egressDetails(problem)).toEqual({ reason: "unsafe_address", rule: "loopback" });
    expect(egressProblem("https://169.254.169.254/", false, "baseUrl")?.message).toBe("baseUrl may not point at a link-local address: 169.254.169.254 (169.254.0.0/16)");
    expect(egressProblem("https://[::ffff:10.0.0.1]/", false)?.message).toBe("url may not point at a private address: [::ffff:a00:1] (10.0.0.0/8 inside ::ffff:0:0/96)");
    expect(egressProblem("https://metadata.google.internal/", false)?.message).toBe("url may not point at an internal name: metadata.google.internal (*.internal)");
    expect(egressProblem("https://127.0.0.1/", true)?.message).toBe("url may not point at a loopback address: 127.0.0.1 (127.0.0.0/8); in local development only plain http may reach loopback");
    expect(egressDetails({ message: "url must use https" })).toEqual({});
  });
});

describe("the scheme and shape rules", () => {
  it("LOCAL_DEV relaxes plain http to loopback only (127.0.0.0/8, [::1], localhost, *.localhost); off, it is refused as loopback", () => {
    for (const url of ["http://localhost:8080/hook", "http://127.0.0.1:9/hook", "http://127.0.0.2/hook", "http://[::1]:8080/hook", "http://LOCALHOST/hook", "http://foo.localhost/", "http://2130706433:9/", "http://[::ffff:127.0.0.1]:9/"]) {
      expect({ url, problem: egressProblem(url, true) }).toEqual({ url, problem: undefined });
      expect({ url, rule: ruleOf(url) }).toEqual({ url, rule: "loopback" });
    }
  });

  it("plain http to a private or otherwise internal address stays refused in local development, by its rule", () => {
    for (const [url, rule] of [["http://10.0.0.1/", "private"], ["http://0.0.0.0:9/", "unspecified"], ["http://169.254.169.254/", "link_local"], ["http://[fd00::1]/", "private"], ["http://printer.local/", "internal_name"]] as const) {
      expect({ url, rule: ruleOf(url, true) }).toEqual({ url, rule });
    }
  });

  it("plain http to a public host is refused as a scheme problem (no rule)", () => {
    expect(egressProblem("http://tools.example.com/hook", false)).toEqual({ message: "url must use https" });
    expect(egressProblem("http://tools.example.com/hook", true)).toEqual({ message: "url must use https (plain http only to a loopback host: localhost, 127.0.0.1 or [::1])" });
    expect(egressProblem("http://localhost.example.com/", true)?.rule).toBeUndefined();
  });

  it("other schemes, relative URLs and URLs carrying credentials are refused", () => {
    expect(egressProblem("ftp://127.0.0.1/hook", true)?.message).toMatch(/^url must use https/);
    expect(egressProblem("ws://localhost/hook", true)?.message).toMatch(/^url must use https/);
    expect(egressProblem("file:///etc/passwd", true)?.message).toMatch(/^url must use https/);
    expect(egressProblem("/hook", true)).toEqual({ message: "url must be an absolute URL" });
    expect(egressProblem("https://user:pass@tools.example.com/hook", false)).toEqual({ message: "url may not carry credentials" });
    expect(egressProblem("https://token@tools.example.com/hook", false)).toEqual({ message: "url may not carry credentials" });
    expect(egressProblem("https://[::1", false)).toEqual({ message: "url must be an absolute URL" });
  });
});

describe("destinationHost: one spelling per destination", () => {
  const hostOf = (url: string) => destinationHost(new URL(url).hostname);
  it("reads an IPv4 address written inside IPv6 as that address, and a name without its trailing dot", () => {
    for (const url of ["https://8.8.8.8/", "https://[::ffff:8.8.8.8]/", "https://[::ffff:808:808]/", "https://[64:ff9b::8.8.8.8]/", "https://[2002:808:808::1]/", "https://[::8.8.8.8]/", "https://134744072/"]) {
      expect({ url, host: hostOf(url) }).toEqual({ url, host: "8.8.8.8" });
    }
    expect(hostOf("https://Hooks.Example.com./x")).toBe("hooks.example.com");
    expect(hostOf("https://[2606:4700::1111]/")).toBe("[2606:4700::1111]");
    expect(hostOf("https://[::1]/")).toBe("[::1]");
  });
});
