#!/usr/bin/env node
// `npm start [-- --port <n>] [-- --dev-key]`: serves the API locally with `wrangler dev` and local
// persistence under .wrangler/state, so state (and interrupted runs) survive a restart of this
// process. `--dev-key` also prints a ready API key of a local tenant "dev" once the server is up.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";

const devKey = process.argv.includes("--dev-key");
const args = process.argv.slice(2).filter((arg) => arg !== "--dev-key");
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
if (devKey) void printDevKey(`http://127.0.0.1:${port}`);

/** Waits for /health, makes sure tenant "dev" exists, and prints a fresh key for it. */
async function printDevKey(base) {
  const token = /^ADMIN_TOKEN=(.*)$/m.exec(readFileSync(devVars, "utf8"))?.[1]?.trim();
  for (let attempt = 0; attempt < 240; attempt++) {
    try {
      if ((await fetch(`${base}/health`)).ok) break;
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const tenant = await fetch(`${base}/v1/admin/tenants`, { method: "POST", headers, body: JSON.stringify({ id: "dev", name: "Local development" }) });
  if (tenant.status !== 201 && tenant.status !== 409) return console.error(`Could not create the dev tenant: ${tenant.status}`);
  const key = await fetch(`${base}/v1/admin/tenants/dev/keys`, { method: "POST", headers, body: JSON.stringify({ name: "npm start --dev-key" }) });
  const body = await key.json();
  console.log(`\nA key of the local tenant "dev" (shown once):\n\n  export KEY=${body.key}\n  curl -s ${base}/v1/me -H "authorization: Bearer $KEY"\n`);
}
child.on("exit", (code, signal) => process.exit(signal ? 1 : (code ?? 0)));
