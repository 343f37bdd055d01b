import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient, isApiError } from "../../client/index.ts";
import { newTenant } from "../api/helpers.ts";

// The SDK's skills and prompt templates against the real app: what a skill or template run uses.

describe("client.resources", { timeout: 30_000 }, () => {
  it("puts a skill and a template that runs then use, and deletes them", async () => {
    const tenant = await newTenant("sdk_res");
    const client = createClient({ baseUrl: "http://api.test", key: tenant.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const session = await client.sessions.create({});
    await client.lanes.put(session.id, "main");
    expect(await client.resources.putSkill(session.id, "greet", { description: "Say hello", content: "Greet the user warmly." })).toEqual({ name: "greet" });
    expect(await client.resources.putTemplate(session.id, "ask", { content: "Tell me about $1" })).toEqual({ name: "ask" });

    const skill = await client.operations.accept(session.id, "main", { kind: "skill", name: "greet" });
    expect(await client.operations.get(session.id, "main", skill.operationId, { wait: 30 })).toMatchObject({ state: "settled", result: { status: "completed" } });
    const template = await client.operations.accept(session.id, "main", { kind: "prompt_template", name: "ask", args: ["tides"] });
    expect(await client.operations.get(session.id, "main", template.operationId, { wait: 30 })).toMatchObject({ state: "settled", result: { status: "completed" } });

    await client.resources.deleteSkill(session.id, "greet");
    await client.resources.deleteTemplate(session.id, "ask");
    const refused = await client.operations.accept(session.id, "main", { kind: "skill", name: "greet" }).catch((error: unknown) => error);
    expect(isApiError(refused, "UnknownSkill")).toBe(true);
  });
});
