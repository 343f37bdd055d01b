import { createServer, type ServerResponse } from "node:http";
import { listenOnLoopback, type LoopbackServer } from "./loopback-server.ts";

// Loopback servers of the egress tests (issue 30, items 7–9), used by the workers pool's global
// setup and by the e2e tests:
//
// - the tripwire: a listener nothing may ever reach. It counts every TCP connection (a TLS
//   handshake that fails still connected) and records every request it reads. Tests point refused
//   URLs and redirect targets at it and assert it saw nothing.
// - the fixtures: `GET /tripwire` answers what the tripwire saw; `/redirect/…` answers
//   `307 Location: <tripwire>/latest/meta-data` (a provider base URL that redirects to a metadata
//   address); `/reset/…` destroys the connection without answering; `/hang/…` never answers.
// - a closed port: listened on once and closed, so a connection to it is refused.

export interface TripwireLog {
  connections: number;
  requests: { method: string; url: string }[];
}

export interface EgressFixtures {
  tripwireUrl: string;
  fixturesUrl: string;
  closedUrl: string;
  close: () => Promise<void>;
}

export async function startEgressFixtures(): Promise<EgressFixtures> {
  const log: TripwireLog = { connections: 0, requests: [] };
  const tripwireServer = createServer((request, response) => {
    log.requests.push({ method: request.method ?? "", url: request.url ?? "" });
    response.writeHead(200, { "content-type": "application/json" }).end('{"reached":"the tripwire"}');
  });
  tripwireServer.on("connection", () => {
    log.connections++;
  });
  const tripwire = await listenOnLoopback(tripwireServer, []);

  const hanging: ServerResponse[] = [];
  const fixtures = await listenOnLoopback(
    createServer((request, response) => {
      const [, area] = (request.url ?? "").split("?")[0]?.split("/") ?? [];
      if (area === "tripwire") response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(log));
      else if (area === "redirect") response.writeHead(307, { location: `${tripwire.url}/latest/meta-data` }).end("moved");
      else if (area === "reset") request.socket.destroy();
      else if (area === "hang") hanging.push(response);
      else response.writeHead(404).end();
    }),
    hanging,
  );

  const closed: LoopbackServer = await listenOnLoopback(createServer(), []);
  await closed.close();
  return {
    tripwireUrl: tripwire.url,
    fixturesUrl: fixtures.url,
    closedUrl: closed.url,
    close: async () => {
      await fixtures.close();
      await tripwire.close();
    },
  };
}
