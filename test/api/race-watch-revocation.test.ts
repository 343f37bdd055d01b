import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { adminToken, call, errorCode } from "./helpers.ts";
import { order, signalsReturn, waitsFor } from "./race-helpers.ts";
import { connect, expectSnapshot, upgrade, watchSetup } from "./watch-helpers.ts";

// Race between objects (QUALITY R2, ARCHITECTURE D17): a key revoked while a watch socket opened
// with it registers with the TenantObject (durable-objects/session/session-watch.ts registers after
// accepting the socket). The tenant's `registerWatch` and `revokeKey` are ordered by wrapping them
// (race-helpers.ts). Either way no socket of the revoked key stays open.

let restore: (() => Promise<void>) | undefined;
afterEach(async () => {
  await restore?.();
  restore = undefined;
});

function revoke(tenantId: string, keyId: string): Promise<Response> {
  return call(`/v1/admin/tenants/${tenantId}/keys/${keyId}`, { method: "DELETE", token: adminToken() });
}

describe("race: revocation vs watch registration", { timeout: 30_000 }, () => {
  it("the registration first: the socket opens with its snapshot, then the revocation closes it (1008)", async () => {
    const { tenantId, key, keyId, sessionPath } = await watchSetup("rwr_reg");
    ({ restore } = await order([{ stub: env.TENANTS.getByName(tenantId), methods: { registerWatch: signalsReturn("registered"), revokeKey: waitsFor("registered") } }]));
    const revoking = revoke(tenantId, keyId);
    const socket = await connect(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(socket);
    expect((await revoking).status).toBeLessThan(300);
    expect((await socket.closed()).code).toBe(1008);
  });

  it("the revocation first (while the socket registers): the upgrade is refused 401 and no socket is handed out", async () => {
    const { tenantId, key, keyId, sessionPath } = await watchSetup("rwr_rev");
    ({ restore } = await order([
      {
        stub: env.TENANTS.getByName(tenantId),
        methods: {
          registerWatch: async (run, _args, points) => {
            points.signal("registering");
            await points.reached("revoked");
            return run();
          },
          revokeKey: async (run, _args, points) => {
            await points.reached("registering");
            const answer = await run();
            points.signal("revoked");
            return answer;
          },
        },
      },
    ]));
    const [response, revoked] = await Promise.all([upgrade(`${sessionPath}/lanes/main/watch`, { authorization: `Bearer ${key}` }), revoke(tenantId, keyId)]);
    expect(revoked.status).toBeLessThan(300);
    expect({ status: response.status, socket: response.webSocket, code: await errorCode(response) }).toEqual({ status: 401, socket: null, code: "Unauthenticated" });
    // Later upgrades with that key are refused at the edge.
    expect((await upgrade(`${sessionPath}/lanes/main/watch`, { authorization: `Bearer ${key}` })).status).toBe(401);
  });
});
