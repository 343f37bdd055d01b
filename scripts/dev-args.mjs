// The `wrangler dev` command line of `npm start`: the script's defaults, each left out when the
// user passes the same flag (wrangler exits on a flag given twice), then the user's own flags.

/** What `npm start` passes unless the user passes the same flag. */
export const DEV_DEFAULTS = [
  ["--port", "8787"],
  ["--ip", "127.0.0.1"],
  ["--persist-to", ".wrangler/state"],
  ["--show-interactive-dev-session", "false"],
];

/** The value of `--name value` or `--name=value` in `args`, or undefined. */
export function flagValue(args, name) {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === name) return args[i + 1];
    if (arg.startsWith(`${name}=`)) return arg.slice(name.length + 1);
  }
  return undefined;
}

/** Whether `args` set `name` in any form (`--name`, `--name=…`, `--no-name`). */
export function hasFlag(args, name) {
  const negated = `--no-${name.slice(2)}`;
  return args.some((arg) => arg === name || arg.startsWith(`${name}=`) || arg === negated);
}

/**
 * `wrangler dev` arguments for the user's `args`: every default the user did not override, then
 * the user's flags unchanged. `port` is where the server listens, for the script's own requests.
 */
export function wranglerDevArgs(args) {
  const defaults = DEV_DEFAULTS.filter(([name]) => !hasFlag(args, name)).map(([name, value]) => `${name}=${value}`);
  return { args: ["dev", ...defaults, ...args], port: flagValue(args, "--port") ?? "8787" };
}

/**
 * `npm start`'s own flags, taken out of `args` before the rest goes to `wrangler dev`:
 * `--dev-key` (print a key of a local tenant once the server is up), `--dev-tenant <id>` (that
 * tenant's id, "dev" by default; implies --dev-key) and `--no-cron` (leave the minute cron to
 * be fired by hand).
 */
export function splitOwnFlags(args) {
  const rest = [];
  let devKey = false;
  let cron = true;
  let devTenant = "dev";
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--dev-key") devKey = true;
    else if (arg === "--no-cron") cron = false;
    else if (arg === "--dev-tenant" || arg.startsWith("--dev-tenant=")) {
      const value = arg === "--dev-tenant" ? args[++i] : arg.slice("--dev-tenant=".length);
      // The next flag is not an id: `--dev-tenant --port 9000` would name a tenant "--port".
      if (!value || value.startsWith("--")) throw new Error("--dev-tenant needs a tenant id: npm start -- --dev-tenant <id>");
      devTenant = value;
      devKey = true;
    } else rest.push(arg);
  }
  return { devKey, devTenant, cron, rest };
}

/** The address `wrangler dev` listens on for the user's `args` (the --ip flag, without brackets). */
export function listenAddress(args) {
  return (flagValue(args, "--ip") ?? "127.0.0.1").replace(/^\[(.*)\]$/, "$1");
}

/** The protocol `wrangler dev` serves for the user's `args` (`--local-protocol`, http by default). */
export function localProtocol(args) {
  return flagValue(args, "--local-protocol") === "https" ? "https" : "http";
}

/**
 * The URL the script's own requests (the health check, the minute cron, --dev-key) go to: the
 * protocol and address wrangler serves, or its loopback when it listens on every interface
 * (0.0.0.0 → 127.0.0.1, :: → [::1]); an IPv6 address in brackets.
 */
export function localBase(args) {
  const { port } = wranglerDevArgs(args);
  const ip = listenAddress(args);
  const host = ip.includes(":") ? `[${ip}]` : ip;
  // The URL parser writes every spelling of an address one way (0 → 0.0.0.0, [0::0] → [::]).
  const normal = URL.canParse(`http://${host}`) ? new URL(`http://${host}`).hostname : host;
  const loopback = normal === "0.0.0.0" ? "127.0.0.1" : normal === "[::]" ? "[::1]" : normal;
  return `${localProtocol(args)}://${loopback}:${port}`;
}

/** The state directory of the user's `args`: `--persist-to`, or the script's default. */
export function persistDir(args) {
  return flagValue(args, "--persist-to") ?? DEV_DEFAULTS.find(([name]) => name === "--persist-to")?.[1] ?? ".wrangler/state";
}
