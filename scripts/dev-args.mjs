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
