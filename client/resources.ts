import type { PromptTemplate, Skill } from "../schema/settings.ts";
import { path, type CallOptions, type HttpClient } from "./http.ts";
import { sessionPath } from "./sessions.ts";

/**
 * A session's skills and prompt templates: what `{ kind: "skill", name }` and
 * `{ kind: "prompt_template", name, args? }` operations run. Names are 1–64 characters of
 * `A–Z a–z 0–9 _ . -`; an operation naming a missing one is 404 UnknownSkill / UnknownTemplate.
 */
export class ResourcesApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /** `PUT …/skills/{name}` `{ description?, content }` → `{ name }` (creates or replaces). */
  putSkill(sessionId: string, name: string, skill: Skill, options: CallOptions = {}): Promise<{ name: string }> {
    return this.http.json({ ...options, method: "PUT", path: sessionPath(sessionId, `/skills${path(name)}`), body: skill });
  }

  /** `DELETE …/skills/{name}` → 204 (idempotent). */
  async deleteSkill(sessionId: string, name: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: sessionPath(sessionId, `/skills${path(name)}`) });
  }

  /** `PUT …/templates/{name}` `{ description?, content }` → `{ name }` (creates or replaces). */
  putTemplate(sessionId: string, name: string, template: PromptTemplate, options: CallOptions = {}): Promise<{ name: string }> {
    return this.http.json({ ...options, method: "PUT", path: sessionPath(sessionId, `/templates${path(name)}`), body: template });
  }

  /** `DELETE …/templates/{name}` → 204 (idempotent). */
  async deleteTemplate(sessionId: string, name: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: sessionPath(sessionId, `/templates${path(name)}`) });
  }
}
