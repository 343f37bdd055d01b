#!/usr/bin/env node
// `npm start [-- --port <n>]`: serves the API locally with `wrangler dev` and local persistence
// under .wrangler/state, so state (and interrupted runs) survive a restart of this process.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";

const args = process.argv.slice(2);
const devVars = ".dev.vars";

// The admin token is a secret; locally wrangler reads it from .dev.vars (never committed).
if (!existsSync(devVars) || !/^ADMIN_TOKEN=/m.test(readFileSync(devVars, "utf8"))) {
  const token = `adm_${randomBytes(24).toString("base64url")}`;
  const previous = existsSync(devVars) ? readFileSync(devVars, "utf8") : "";
  writeFileSync(devVars, `${previous}${previous && !previous.endsWith("\n") ? "\n" : ""}ADMIN_TOKEN=${token}\n`, { mode: 0o600 });
  console.log(`Created ${devVars} with a new admin token:\n\n  ADMIN_TOKEN=${token}\n`);
}

const portIndex = args.indexOf("--port");
const port = portIndex >= 0 ? args[portIndex + 1] : "8787";
const rest = portIndex >= 0 ? [...args.slice(0, portIndex), ...args.slice(portIndex + 2)] : args;

const persist = rest.includes("--persist-to") ? [] : ["--persist-to", ".wrangler/state"];
const child = spawn(
  "wrangler",
  ["dev", "--port", String(port), "--ip", "127.0.0.1", ...persist, "--show-interactive-dev-session=false", ...rest],
  { stdio: "inherit", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(signal ? 1 : (code ?? 0)));
