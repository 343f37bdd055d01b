import { existsSync } from "node:fs";
import { arch, platform } from "node:os";
import { chromium, type Browser } from "playwright-core";

// Which Chromium the browser tests drive. `npm ci` must be enough on a fresh Linux machine (no apt,
// no root), so the default is the headless Chromium that `@sparticuz/chromium` ships inside its npm
// package (a Linux x64 binary, unpacked to /tmp on first use). A developer's own browser wins when
// there is one: `INSPECTOR_CHROMIUM`, then a system Chrome or Chromium at the usual paths (what a
// macOS developer has; the npm package cannot run there).
const SYSTEM_BROWSERS = [
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome",
  "/usr/bin/google-chrome-stable",
  "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
  "/Applications/Chromium.app/Contents/MacOS/Chromium",
];

// Flags for a sandboxed CI machine: no setuid sandbox, no GPU, no /dev/shm (small in containers),
// and none of Chromium's own background connections (this machine's network refuses them).
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/** The browser binary to drive and where it came from, or throws saying how to provide one. */
export async function chromiumExecutable(): Promise<{ path: string; source: string }> {
  const configured = process.env.INSPECTOR_CHROMIUM;
  if (configured !== undefined && configured !== "") {
    if (!existsSync(configured)) throw new Error(`INSPECTOR_CHROMIUM is ${configured}, which does not exist`);
    return { path: configured, source: "INSPECTOR_CHROMIUM" };
  }
  const system = SYSTEM_BROWSERS.find((path) => existsSync(path));
  if (system !== undefined) return { path: system, source: "system" };
  if (platform() !== "linux" || arch() !== "x64") {
    throw new Error(`No Chrome or Chromium found at ${SYSTEM_BROWSERS.join(", ")}, and the npm package @sparticuz/chromium only runs on Linux x64: install Chrome or set INSPECTOR_CHROMIUM`);
  }
  const packaged = await import("@sparticuz/chromium");
  return { path: await packaged.default.executablePath(), source: "@sparticuz/chromium" };
}

/** A headless Chromium launched through playwright-core. */
export async function launchChromium(): Promise<Browser> {
  const { path } = await chromiumExecutable();
  return chromium.launch({ executablePath: path, args: ARGS });
}
