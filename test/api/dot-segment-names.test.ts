import { describe, expect, it } from "vitest";
import { call, json, newTenant } from "./helpers.ts";

// Names a path segment can never carry. A URL's `.` and `..` segments (also
// written `%2E`, `%2e%2E`) are removed by URL parsing before any router sees them, so a branch or
// skill named `.` or `..` is created by one request and can then never be addressed by its own
// routes; `GET …/branches/../entries` even answers another resource (the session's entries) 200.
// Bad input must be a 400 ValidationFailed, with nothing written.

async function session(prefix: string) {
  const { key } = await newTenant(prefix);
  const sid = `${prefix}_s`;
  await json(await call("/v1/sessions", { body: { id: sid }, token: key }), 201);
  return { key, base: `/v1/sessions/${sid}` };
}

describe("dot segment names", () => {
  for (const name of ["..", "."]) {
    it(`POST …/branches { name: "${name}" } is 400 ValidationFailed and creates no branch`, async () => {
      const { key, base } = await session(`rvdot${name.length}`);
      const created = await call(`${base}/branches`, { body: { name, at: null }, token: key });
      const text = await created.text();
      expect(created.status, text).toBe(400);
      expect(JSON.parse(text).error.code).toBe("ValidationFailed");
      const listed = await json<{ items: { name: string }[] }>(await call(`${base}/branches`, { token: key }), 200);
      expect(listed.items.map((branch) => branch.name)).not.toContain(name);
    });
  }

  it("a skill named .. given at session creation is refused (DELETE/PUT …/skills/{name} can never reach it)", async () => {
    const { key } = await newTenant("rvdot4");
    const created = await call("/v1/sessions", { body: { id: "rvdot4_s", resources: { skills: { "..": { description: "d", content: "c" } }, promptTemplates: {} } }, token: key });
    const text = await created.text();
    expect(created.status, text).toBe(400);
  });
});
