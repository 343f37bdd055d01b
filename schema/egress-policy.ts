// The egress policy (ARCHITECTURE D17, QUALITY R10): where the service may send a request on a
// tenant's behalf — an http tool's call, an MCP exchange, a webhook delivery, a provider request
// to a tenant's base URL. One function decides, at registration and again before every request.
//
// It lives in schema/ because it is pure (URL parsing and address arithmetic: no I/O, no platform
// API, nothing of ours imported) and both sides of the layer graph need it: the worker's routes
// refuse a URL at registration, and tools/, models/ and the durable objects refuse it again at
// call time. schema/ is the one layer every other may import and that imports nothing of ours.
//
// It judges the host as `new URL()` normalizes it: the WHATWG parser already turns every IPv4
// literal form (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`, a trailing dot) into dotted decimal,
// lowercases names, decodes percent-escapes and applies IDNA, and writes IPv6 in its compressed
// hex form. What it cannot see is where a public name resolves (docs/security.md).

/** The rule that refused an address (`details.rule` of a refusal, next to `reason: "unsafe_address"`). */
export type AddressRule = "loopback" | "unspecified" | "private" | "link_local" | "cgnat" | "benchmark" | "multicast" | "reserved" | "cloud_internal" | "internal_name";

/** Why a URL may not be requested; `rule` is set when the address (not the URL's shape) is what is refused. */
export interface EgressProblem {
  message: string;
  rule?: AddressRule;
}

/** What a refused host is, in words, with the range or name pattern that matched. */
interface AddressRefusal {
  rule: AddressRule;
  range: string;
}

const RULE_WORDS: Record<AddressRule, string> = {
  loopback: "a loopback address",
  unspecified: "an unspecified address",
  private: "a private address",
  link_local: "a link-local address",
  cgnat: "a shared (carrier-grade NAT) address",
  benchmark: "a benchmarking address",
  multicast: "a multicast address",
  reserved: "a reserved address",
  cloud_internal: "a cloud platform's internal address",
  internal_name: "an internal name",
};

/**
 * Why the service may not send a request to `url`, or undefined when it may: an absolute https
 * URL without credentials whose host is public. `localDevelopment` (`LOCAL_DEV=on`) relaxes one
 * thing only: plain http to a loopback host (`localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`).
 * https to loopback stays refused there too (a local server has no certificate the runtime would
 * trust), and so does every other range. `field` names the URL in the message (`url`, `baseUrl`).
 */
export function egressProblem(url: string, localDevelopment: boolean, field = "url"): EgressProblem | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { message: `${field} must be an absolute URL` };
  }
  if (parsed.username !== "" || parsed.password !== "") return { message: `${field} may not carry credentials` };
  const http = parsed.protocol === "http:";
  if (parsed.protocol !== "https:" && !http) return { message: schemeMessage(field, localDevelopment) };
  const refused = hostRefusal(parsed.hostname);
  const relaxed = localDevelopment && http && refused?.rule === "loopback";
  if (refused && !relaxed) {
    const hint = localDevelopment && refused.rule === "loopback" ? "; in local development only plain http may reach loopback" : "";
    return { message: `${field} may not point at ${RULE_WORDS[refused.rule]}: ${parsed.hostname} (${refused.range})${hint}`, rule: refused.rule };
  }
  if (http && !relaxed) return { message: schemeMessage(field, localDevelopment) };
  return undefined;
}

/** The `details` of a 4xx for `problem`: `reason: "unsafe_address"` and the rule, when an address was refused. */
export function egressDetails(problem: EgressProblem): Record<string, string> {
  return problem.rule === undefined ? {} : { reason: "unsafe_address", rule: problem.rule };
}

function schemeMessage(field: string, localDevelopment: boolean): string {
  return localDevelopment ? `${field} must use https (plain http only to a loopback host: localhost, 127.0.0.1 or [::1])` : `${field} must use https`;
}

/** Why a request may not go to `hostname` (as `new URL()` writes it), or undefined for a public host. */
/**
 * The destination `hostname` (as `new URL()` writes it) names, in one spelling per destination: an
 * IPv6 literal that carries an IPv4 address (mapped, compatible, NAT64, 6to4) is that IPv4 address,
 * and a name loses its trailing dots. Limits counted per destination (webhook endpoints per host)
 * compare these, so another spelling of one address is not another destination.
 */
export function destinationHost(hostname: string): string {
  if (!hostname.startsWith("[")) return hostname.replace(/\.+$/, "");
  const address = parseIpv6(hostname.slice(1, -1));
  const embedded = address === undefined ? undefined : embeddedIpv4(address);
  return embedded === undefined ? hostname : dottedIpv4(embedded.ipv4);
}

export function hostRefusal(hostname: string): AddressRefusal | undefined {
  if (hostname.startsWith("[")) return ipv6Refusal(hostname.slice(1, -1));
  const ipv4 = parseDottedIpv4(hostname);
  if (ipv4 !== undefined) return ipv4Refusal(ipv4);
  return nameRefusal(hostname);
}

// ---- names -------------------------------------------------------------------------------------

/** Special-use names (RFC 6761 `localhost`, RFC 6762 `.local`, RFC 8375 `home.arpa`, ICANN's `.internal`), and `.localdomain`. */
const INTERNAL_SUFFIXES = ["local", "internal", "home.arpa", "localdomain"];

/** Names many systems' hosts files give the loopback addresses besides `localhost` (Red Hat's family, for one). */
const LOOPBACK_NAMES: ReadonlySet<string> = new Set(["localhost.localdomain", "localhost4.localdomain4", "localhost6.localdomain6"]);

function nameRefusal(hostname: string): AddressRefusal | undefined {
  // `localhost.` is `localhost`: a fully qualified name ends in the root's empty label.
  const name = hostname.replace(/\.+$/, "");
  if (name === "localhost" || name.endsWith(".localhost")) return { rule: "loopback", range: name === "localhost" ? "localhost" : "*.localhost" };
  if (LOOPBACK_NAMES.has(name)) return { rule: "loopback", range: name };
  for (const suffix of INTERNAL_SUFFIXES) {
    if (name === suffix || name.endsWith(`.${suffix}`)) return { rule: "internal_name", range: `*.${suffix}` };
  }
  // A name of one label is looked up in the resolver's search domains (`metadata`, `intranet`):
  // never a public host.
  if (!name.includes(".")) return { rule: "internal_name", range: "a single-label name" };
  return undefined;
}

// ---- IPv4 --------------------------------------------------------------------------------------

/** [network, prefix length, rule] of every IPv4 range that is not a public unicast address. */
const IPV4_RANGES: readonly (readonly [string, number, AddressRule])[] = [
  ["0.0.0.0", 8, "unspecified"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "cgnat"],
  // Azure's platform endpoint (the "WireServer": instance metadata, DNS, agent configuration) is a
  // public address every Azure machine reaches without a route; self-hosted there it is internal.
  ["168.63.129.16", 32, "cloud_internal"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link_local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "reserved"],
  ["192.0.2.0", 24, "reserved"],
  ["192.88.99.0", 24, "reserved"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "benchmark"],
  ["198.51.100.0", 24, "reserved"],
  ["203.0.113.0", 24, "reserved"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"],
];

const IPV4_TABLE = IPV4_RANGES.map(([network, bits, rule]) => ({ network: parseDottedIpv4(network) ?? 0, bits, rule, range: `${network}/${bits}` }));

function ipv4Refusal(address: number): AddressRefusal | undefined {
  for (const { network, bits, rule, range } of IPV4_TABLE) {
    if (ipv4Prefix(address, bits) === network) return { rule, range };
  }
  return undefined;
}

function dottedIpv4(address: number): string {
  return [24, 16, 8, 0].map((shift) => (address >>> shift) & 0xff).join(".");
}

function ipv4Prefix(address: number, bits: number): number {
  return bits === 0 ? 0 : (address & (~0 << (32 - bits))) >>> 0;
}

/** Four decimal octets (the only form the URL parser writes), as an unsigned 32-bit number. */
function parseDottedIpv4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || parts.some((part) => !/^\d{1,3}$/.test(part) || Number(part) > 255)) return undefined;
  return parts.reduce((value, part) => value * 256 + Number(part), 0);
}

// ---- IPv6 --------------------------------------------------------------------------------------

/**
 * [network, prefix length, rule or "embedded"] of IPv6 ranges, most specific first; "embedded"
 * ranges carry an IPv4 address in their last 32 bits (mapped, compatible, NAT64) or, for 6to4,
 * in bits 16–47, which is judged as IPv4. Anything outside 2000::/3 (global unicast) is reserved.
 */
const IPV6_RANGES: readonly (readonly [string, number, AddressRule | "embedded"])[] = [
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["::ffff:0:0", 96, "embedded"],
  ["::", 96, "embedded"],
  ["64:ff9b::", 96, "embedded"],
  ["64:ff9b:1::", 48, "private"],
  ["100::", 64, "reserved"],
  ["2001:2::", 48, "benchmark"],
  ["2001::", 23, "reserved"],
  ["2001:db8::", 32, "reserved"],
  ["2002::", 16, "embedded"],
  ["3fff::", 20, "reserved"],
  ["5f00::", 16, "reserved"],
  ["fc00::", 7, "private"],
  ["fe80::", 10, "link_local"],
  ["ff00::", 8, "multicast"],
];

const IPV6_TABLE = IPV6_RANGES.map(([network, bits, rule]) => ({ network: parseIpv6(network) ?? 0n, bits, rule, range: `${network}/${bits}` }));
const GLOBAL_UNICAST = { network: parseIpv6("2000::") ?? 0n, bits: 3 };

/** The IPv4 address an IPv6 address carries, and the range that carries it; undefined for none. */
function embeddedIpv4(address: bigint): { ipv4: number; range: string } | undefined {
  const carrier = IPV6_TABLE.find(({ network, bits }) => ipv6Prefix(address, bits) === network);
  if (carrier?.rule !== "embedded") return undefined;
  const ipv4 = Number(carrier.range.startsWith("2002:") ? (address >> 80n) & 0xffffffffn : address & 0xffffffffn);
  return { ipv4, range: carrier.range };
}

function ipv6Refusal(text: string): AddressRefusal | undefined {
  const address = parseIpv6(text);
  if (address === undefined) return { rule: "reserved", range: "an unreadable IPv6 address" };
  const embedded = embeddedIpv4(address);
  if (embedded !== undefined) {
    const inner = ipv4Refusal(embedded.ipv4);
    if (inner) return { rule: inner.rule, range: `${inner.range} inside ${embedded.range}` };
    // A public IPv4 address written as mapped, NAT64 or 6to4 is that public address; the
    // deprecated compatible form (::a.b.c.d) is not routed at all.
    return embedded.range === "::/96" ? { rule: "reserved", range: embedded.range } : undefined;
  }
  for (const { network, bits, rule, range } of IPV6_TABLE) {
    if (ipv6Prefix(address, bits) === network) return { rule: rule === "embedded" ? "reserved" : rule, range };
  }
  if (ipv6Prefix(address, GLOBAL_UNICAST.bits) !== GLOBAL_UNICAST.network) return { rule: "reserved", range: "outside 2000::/3" };
  return undefined;
}

function ipv6Prefix(address: bigint, bits: number): bigint {
  const shift = BigInt(128 - bits);
  return (address >> shift) << shift;
}

/** An IPv6 address (`::` compression and a dotted IPv4 tail allowed) as a 128-bit number. */
function parseIpv6(text: string): bigint | undefined {
  let groups = text.split(":");
  const tail = groups.at(-1) ?? "";
  if (tail.includes(".")) {
    const ipv4 = parseDottedIpv4(tail);
    if (ipv4 === undefined) return undefined;
    groups = [...groups.slice(0, -1), (ipv4 >>> 16).toString(16), (ipv4 & 0xffff).toString(16)];
  }
  const gap = groups.indexOf("");
  if (gap !== -1) {
    const head = groups.slice(0, gap);
    const rest = groups.slice(gap).filter((group) => group !== "");
    const missing = 8 - head.length - rest.length;
    if (missing < 1) return undefined;
    groups = [...head, ...Array<string>(missing).fill("0"), ...rest];
  }
  if (groups.length !== 8 || groups.some((group) => !/^[0-9a-f]{1,4}$/i.test(group))) return undefined;
  return groups.reduce((value, group) => (value << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}
