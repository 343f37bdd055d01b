import { describe, expect, it } from "vitest";
import type { Agent } from "../../schema/agents.ts";
import { call, json, newTenant } from "./helpers.ts";
import { CLIENT_TOOL, putTool } from "./tenant-tool-helpers.ts";

// docs/agents.md: a tenant tool named by an agent is pinned at its current revision and shown as
// `{ "kind": "tenant", "tool": "lookup", "revision": 2 }` — "(a `revision` you send is not taken:
// each version pins what is current when it is made, a `PATCH` too)". A `revision` sent is thus
// ignored, not refused: a client can post back what it read.

describe("a revision sent in an agent's tenant tool reference", () => {
  it("POST /v1/agents ignores it and pins the current revision", async () => {
    const { key } = await newTenant("agrev_post");
    await json(await putTool(key, "lookup", CLIENT_TOOL), 201);
    await json(await putTool(key, "lookup", { ...CLIENT_TOOL, description: "Revision two" }), 200);
    const created = await call("/v1/agents", { token: key, body: { id: "a", tools: { orders: { kind: "tenant", tool: "lookup", revision: 1 } } } });
    expect(created.status).toBe(201);
    expect((await created.json<Agent>()).tools).toEqual({ orders: { kind: "tenant", tool: "lookup", revision: 2 } });
  });

  it("PATCH /v1/agents/{id} ignores it and pins the current revision", async () => {
    const { key } = await newTenant("agrev_patch");
    await json(await putTool(key, "lookup", CLIENT_TOOL), 201);
    await json(await call("/v1/agents", { token: key, body: { id: "a", tools: { orders: { kind: "tenant", tool: "lookup" } } } }), 201);
    await json(await putTool(key, "lookup", { ...CLIENT_TOOL, description: "Revision two" }), 200);
    // What GET /v1/agents/a shows for the tool, sent back as the patch of it.
    const patched = await call("/v1/agents/a", { method: "PATCH", token: key, body: { tools: { orders: { kind: "tenant", tool: "lookup", revision: 1 } } } });
    expect(patched.status).toBe(200);
    expect((await patched.json<Agent>()).tools).toEqual({ orders: { kind: "tenant", tool: "lookup", revision: 2 } });
  });
});
