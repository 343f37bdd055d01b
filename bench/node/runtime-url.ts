import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";

// `wrangler dev` does not serve a Worker itself: its port belongs to a reload proxy (a Worker and a
// Durable Object of wrangler's own, in a workerd process of their own) that forwards each HTTP
// request over a second loopback HTTP connection to the workerd that runs the Worker. A WebSocket,
// once upgraded, is piped through natively, so the proxy costs an HTTP request far more than a
// socket frame (measured: 1.9 ms of latency and 2.5 ms of CPU per HTTP prompt on this machine).
// No deployment has that proxy. The bench therefore talks to each server's runtime directly: the
// loopback listener of a workerd process in the server's process group that answers a probe
// exactly as the proxy does. Linux only (/proc); elsewhere the proxy's URL is kept.

/** The runtime's own URL for the server on `proxyUrl` in process group `pgid`, or undefined. */
export async function runtimeUrl(pgid: number, proxyUrl: string, probePath: string): Promise<string | undefined> {
  const proxyPort = Number(new URL(proxyUrl).port);
  let expected: string;
  try {
    expected = await answerOf(`${proxyUrl}${probePath}`);
  } catch {
    return undefined;
  }
  for (const port of listeningPorts(pgid)) {
    if (port === proxyPort) continue;
    const candidate = `http://127.0.0.1:${port}`;
    try {
      if ((await answerOf(`${candidate}${probePath}`)) === expected) return candidate;
    } catch {
      // not an HTTP listener, or not this one
    }
  }
  return undefined;
}

async function answerOf(url: string): Promise<string> {
  const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
  return `${response.status} ${await response.text()}`;
}

/** Loopback TCP ports in LISTEN state held by the workerd processes of `pgid`. */
function listeningPorts(pgid: number): number[] {
  const portOfInode = new Map<string, number>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [, local, , state, , , , , , inode] = fields;
      // 0A: LISTEN. The local address is hex `address:port`.
      if (state !== "0A" || !local || !inode) continue;
      portOfInode.set(inode, Number.parseInt(local.split(":")[1] ?? "", 16));
    }
  }
  const ports: number[] = [];
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(join("/proc", pid, "stat"), "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      if (comm !== "workerd" || Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]) !== pgid) continue;
      for (const fd of readdirSync(join("/proc", pid, "fd"))) {
        const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(join("/proc", pid, "fd", fd)))?.[1];
        const port = inode === undefined ? undefined : portOfInode.get(inode);
        if (port !== undefined && !ports.includes(port)) ports.push(port);
      }
    } catch {
      // the process ended meanwhile, or its descriptors are not ours to read
    }
  }
  return ports;
}
