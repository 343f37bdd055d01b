const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * Why an http tool may not call `url`, or undefined when it may: https anywhere; plain http only
 * to a loopback host and only where loopback URLs are allowed (local development).
 */
export function toolUrlProblem(url: string, allowLoopback: boolean): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "url must be an absolute URL";
  }
  if (parsed.username !== "" || parsed.password !== "") return "url may not carry credentials";
  if (parsed.protocol === "https:") return undefined;
  if (parsed.protocol === "http:" && allowLoopback && LOOPBACK_HOSTS.has(parsed.hostname)) return undefined;
  return allowLoopback ? "url must use https (plain http only to localhost, 127.0.0.1 or [::1])" : "url must use https";
}
