import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { tenantWithSession } from "./session-helpers.ts";

// Only `pi` and `pi.*` are reserved, in that case: `PI.app` is an application namespace, exported
// with the session's values and copied by a tree fork like any other.

type Line = { type: string; namespace?: string; key?: string; value?: unknown };

describe("an application namespace that only looks like `pi.` in another case", () => {
  it("is exported with the session's values", async () => {
    const { key, base } = await tenantWithSession("rnc_exp");
    expect((await call(`${base}/values/PI.app/colour`, { method: "PUT", body: "blue", token: key })).status).toBe(200);
    expect((await call(`${base}/lists/Pi.log/events`, { body: { n: 1 }, token: key })).status).toBe(201);
    const exported = await call(`${base}/export`, { token: key });
    expect(exported.status).toBe(200);
    const lines: Line[] = (await exported.text()).split("\n").filter((line) => line.length > 0).map((line) => JSON.parse(line));
    const data = lines.filter((line) => line.type === "value" || line.type === "item").map(({ type, namespace, key: k, value }) => ({ type, namespace, key: k, value }));
    expect(data).toEqual([
      { type: "value", namespace: "PI.app", key: "colour", value: "blue" },
      { type: "item", namespace: "Pi.log", key: "events", value: { n: 1 } },
    ]);
  });

  it("does not make the session unforkable; a tree fork copies it", async () => {
    const { key, base } = await tenantWithSession("rnc_fork");
    expect((await call(`${base}/values/PI.app/colour`, { method: "PUT", body: "blue", token: key })).status).toBe(200);
    const fork = await call(`${base}/fork`, { body: { scope: "tree" }, token: key });
    const text = await fork.text();
    expect(fork.status, text).toBe(201);
    const { id } = JSON.parse(text) as { id: string };
    const copied = await call(`/v1/sessions/${id}/values/PI.app/colour`, { token: key });
    expect(copied.status).toBe(200);
    expect((await copied.json<{ value: unknown }>()).value).toBe("blue");
  });
});
