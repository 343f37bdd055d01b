import { describe, expect, it } from "vitest";
import { call, errorCode, newTenant } from "./helpers.ts";
import { ARGS_SCHEMA } from "./tool-api-helpers.ts";

// Maps a client sends by name (tools, skills, prompt templates, their patches) are read by
// valibot's record, which skips `__proto__`, `constructor` and `prototype` without a word: such a
// name is refused 400 (ValidationFailed), never stored nor lost, as session metadata already was.

const CLIENT_TOOL = { kind: "client", description: "A tool", parameters: ARGS_SCHEMA };
const SKILL = { content: "Do it well." };

async function refused(response: Response): Promise<string> {
  expect(response.status).toBe(400);
  return errorCode(response);
}

describe("names a map cannot hold", () => {
  it("a session's tools, skills and prompt templates, and a tool PUT by such a name, are refused; nothing is created", async () => {
    const { key } = await newTenant("rsv_keys");
    for (const name of ["prototype", "constructor"]) {
      expect(await refused(await call("/v1/sessions", { token: key, body: { id: `s_${name}`, tools: { [name]: CLIENT_TOOL, other: CLIENT_TOOL } } }))).toBe("ValidationFailed");
      expect((await call(`/v1/sessions/s_${name}`, { token: key })).status).toBe(404);
    }
    const skills = await call("/v1/sessions", { token: key, body: { id: "s_skills", resources: { skills: { constructor: SKILL }, promptTemplates: {} } } });
    expect(await refused(skills)).toBe("ValidationFailed");
    expect((await call("/v1/sessions", { token: key, body: { id: "s_ok" } })).status).toBe(201);
    expect(await refused(await call("/v1/sessions/s_ok/tools/prototype", { method: "PUT", token: key, body: CLIENT_TOOL }))).toBe("ValidationFailed");
    expect((await call("/v1/sessions/s_ok/tools/other", { method: "PUT", token: key, body: CLIENT_TOOL })).status).toBe(201);
    // An MCP server's replay policy and headers by name too (checked before the server is called).
    const server = { url: "https://mcp.example.com/mcp" };
    expect(await refused(await call("/v1/sessions/s_ok/mcp-servers/m1", { method: "PUT", token: key, body: { ...server, replay: { constructor: "safe" } } }))).toBe("ValidationFailed");
    expect(await refused(await call("/v1/sessions/s_ok/mcp-servers/m1", { method: "PUT", token: key, body: { ...server, headers: { prototype: "x" } } }))).toBe("ValidationFailed");
  });

  it("an agent's tools and resources, and an agent patch naming them, are refused; nothing is written", async () => {
    const { key } = await newTenant("rsv_agent");
    expect(await refused(await call("/v1/agents", { token: key, body: { id: "a1", tools: { prototype: CLIENT_TOOL, other: CLIENT_TOOL } } }))).toBe("ValidationFailed");
    expect((await call("/v1/agents/a1", { token: key })).status).toBe(404);
    expect((await call("/v1/agents", { token: key, body: { id: "a2", tools: { other: CLIENT_TOOL } } })).status).toBe(201);
    expect(await refused(await call("/v1/agents/a2", { method: "PATCH", token: key, body: { tools: { constructor: CLIENT_TOOL } } }))).toBe("ValidationFailed");
    expect(await refused(await call("/v1/agents/a2", { method: "PATCH", token: key, body: { resources: { skills: { prototype: SKILL } } } }))).toBe("ValidationFailed");
    const agent = await (await call("/v1/agents/a2", { token: key })).json<{ version: number; tools?: Record<string, unknown> }>();
    expect(agent.version).toBe(1);
    expect(Object.keys(agent.tools ?? {})).toEqual(["other"]);
  });
});

describe("provider headers and metadata by name", () => {
  it("a session's streamOptions headers or metadata naming a reserved key are refused, at creation and in a PATCH; nothing is written", async () => {
    const { key } = await newTenant("rsv_stream");
    for (const map of ["headers", "metadata"]) {
      for (const name of ["constructor", "prototype"]) {
        const created = await call("/v1/sessions", { token: key, body: { id: `s_${map}_${name}`, settings: { streamOptions: { [map]: { [name]: "x", kept: "y" } } } } });
        expect(await refused(created)).toBe("ValidationFailed");
        expect((await call(`/v1/sessions/s_${map}_${name}`, { token: key })).status).toBe(404);
      }
    }
    expect((await call("/v1/sessions", { token: key, body: { id: "s_patch", settings: { streamOptions: { headers: { kept: "y" } } } } })).status).toBe(201);
    for (const map of ["headers", "metadata"]) {
      const patched = await call("/v1/sessions/s_patch", { method: "PATCH", token: key, body: { settings: { streamOptions: { [map]: { constructor: "x", other: "z" } } } } });
      expect(await refused(patched)).toBe("ValidationFailed");
    }
    // An agent's settings too: a session created from it would send what its author never saw dropped.
    const agent = await call("/v1/agents", { token: key, body: { id: "a_stream", settings: { streamOptions: { metadata: { prototype: "x" } } } } });
    expect(await refused(agent)).toBe("ValidationFailed");
    const session = await (await call("/v1/sessions/s_patch", { token: key })).json<{ settings: { streamOptions: { headers?: Record<string, string>; metadata?: Record<string, string> } } }>();
    expect(session.settings.streamOptions).toEqual({ headers: { kept: "y" } });
  });
});
