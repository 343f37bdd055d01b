// `.dev.vars`: the local secrets and settings `wrangler dev` reads over wrangler.toml's [vars].
// It is never committed. Deployments get wrangler.toml's safe defaults (scripted models off, no
// CORS); local development turns the scripted models on here.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { MIN_ADMIN_TOKEN_CHARS } from "../worker/admin-token.ts";
import { MIN_SECRETS_KEY_LENGTH as MIN_SECRETS_KEY_CHARS } from "../secrets/secret-box.ts";

/**
 * Local settings `npm start` adds when missing; a value the user set is kept. `LOCAL_DEV=on` marks
 * local development: every outbound URL (provider base URLs, http tools, MCP servers, webhooks) may
 * then be plain http to a loopback host (a local model server, a tool server or a test fixture).
 * Deployments never read .dev.vars, and wrangler.toml ships LOCAL_DEV="off", so they accept https
 * to public hosts only (docs/security.md).
 */
export const LOCAL_SETTINGS = { SCRIPTED_MODELS: "on", LOCAL_DEV: "on" };

/**
 * A .dev.vars text as `wrangler dev` reads it: wrangler parses the file with dotenv's `parse`
 * (dotenv 16.3.1, bundled into wrangler; no variable expansion), so `NAME = value`, quoted values
 * ('…', "…" with \n and \r escapes, `…`), `export NAME=…`, `NAME: value` and `# comments` mean
 * here what they mean to the server, and a later line wins over an earlier one. This is that
 * function, line for line (neither dotenv nor wrangler's copy of it is a dependency the script
 * can import). A test compares it with wrangler's own reading of the same files.
 *
 * From dotenv's `parse`, Copyright (c) 2015, Scott Motte, under the BSD 2-Clause License
 * (https://github.com/motdotla/dotenv/blob/master/LICENSE): redistributions of source code must
 * retain this notice, the list of conditions in that license, and its disclaimer.
 */
export function parseDevVars(text) {
  const LINE = /(?:^|^)\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|\s*`(?:\\`|[^`])*`|[^#\r\n]+)?\s*(?:#.*)?(?:$|$)/gm;
  // No prototype: a line named like an Object member (`constructor=…`) is just a name here.
  const parsed = Object.create(null);
  const lines = text.replace(/\r\n?/gm, "\n");
  let match;
  while ((match = LINE.exec(lines)) !== null) {
    let value = (match[2] || "").trim();
    const quote = value[0];
    value = value.replace(/^(['"`])([\s\S]*)\1$/gm, "$2");
    if (quote === '"') value = value.replace(/\\n/g, "\n").replace(/\\r/g, "\r");
    parsed[match[1]] = value;
  }
  return parsed;
}

/** The value of NAME in a .dev.vars text as wrangler reads it (quotes removed), or undefined. */
export function devVar(text, name) {
  const parsed = parseDevVars(text);
  return Object.hasOwn(parsed, name) ? parsed[name] : undefined;
}


/**
 * Makes sure `path` has an ADMIN_TOKEN and a SECRETS_KEY (new random ones when missing) and every local setting,
 * appending only what is missing. Returns the lines it added.
 */
export function ensureDevVars(path) {
  const previous = existsSync(path) ? readFileSync(path, "utf8") : "";
  const added = [];
  // An empty value is missing, as the service takes it: the line added after it wins.
  if (!devVar(previous, "ADMIN_TOKEN")) added.push(`ADMIN_TOKEN=adm_${randomBytes(24).toString("base64url")}`);
  // The key that seals tenants' provider keys at rest (secrets/secret-box.ts): random per checkout.
  if (!devVar(previous, "SECRETS_KEY")) added.push(`SECRETS_KEY=${randomBytes(32).toString("base64url")}`);
  for (const [name, value] of Object.entries(LOCAL_SETTINGS)) {
    if (devVar(previous, name) === undefined) added.push(`${name}=${value}`);
  }
  if (added.length > 0) {
    const separator = previous && !previous.endsWith("\n") ? "\n" : "";
    writeFileSync(path, `${previous}${separator}${added.join("\n")}\n`, { mode: 0o600 });
  }
  return added;
}

/**
 * What in a .dev.vars text keeps the local service from working as documented, as sentences to
 * print (none when all is well). `npm start` never rewrites a value the user set, so a token from
 * before the service required 32 characters is reported rather than replaced.
 */
export function devVarsProblems(text) {
  const problems = [];
  const token = devVar(text, "ADMIN_TOKEN");
  if (token !== undefined && token.length < MIN_ADMIN_TOKEN_CHARS) {
    problems.push(
      `The ADMIN_TOKEN in .dev.vars has ${token.length} characters; the service refuses every admin route (503 NotConfigured) with a token shorter than ${MIN_ADMIN_TOKEN_CHARS}. ` +
        "Delete the ADMIN_TOKEN line from .dev.vars and run npm start again (it writes a new random token), or set a longer one yourself.",
    );
  }
  const secretsKey = devVar(text, "SECRETS_KEY");
  if (secretsKey !== undefined && secretsKey.length < MIN_SECRETS_KEY_CHARS) {
    problems.push(
      `The SECRETS_KEY in .dev.vars has ${secretsKey.length} characters; the service stores no provider key, webhook or http tool secret (503 NotConfigured) with a key shorter than ${MIN_SECRETS_KEY_CHARS}. ` +
        "Delete the SECRETS_KEY lines from .dev.vars and run npm start again (it writes a new random key), or set a longer one yourself. " +
        "Secrets stored under the old key no longer open: put them again.",
    );
  }
  return problems;
}
