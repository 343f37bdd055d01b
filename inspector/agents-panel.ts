import type { Agent } from "../client/agents.ts";
import type { InspectorContext } from "./context.ts";
import { el, jsonBlock, replace, time } from "./dom.ts";
import { Pager } from "./pager.ts";

const PAGE_SIZE = 20;

export interface AgentsHandlers {
  /** List the sessions bound to this agent (any version). */
  onSessions: (agentId: string) => void;
}

/**
 * The tenant's agents in creation order, each at its latest version, a page at a time
 * (`GET /v1/agents`); the one picked shows its definition, and its sessions on request.
 */
export class AgentsPanel {
  private selected: string | undefined;
  private readonly listHost = el("div", {});
  private readonly pager = new Pager("Agent pages", ["Previous", "Next"], () => void this.load());
  private readonly detail = el("div", { class: "agent-detail", hidden: true });

  constructor(
    private readonly root: HTMLElement,
    private readonly context: InspectorContext,
    private readonly handlers: AgentsHandlers,
  ) {}

  async load(): Promise<void> {
    const { cursor, ticket } = this.pager.cursors.ask();
    const page = await this.context.attempt("List agents", () => this.context.client.agents.list({ limit: PAGE_SIZE, ...(cursor !== undefined && { cursor }) }));
    // Another page was asked for since: its answer, not this late one, is shown.
    if (!page || !this.pager.cursors.isLatest(ticket)) return;
    if (!this.root.contains(this.listHost)) replace(this.root, el("h2", { id: "agents-title" }, "Agents"), this.listHost, this.pager.nav, this.detail);
    replace(this.listHost, page.items.length === 0 ? el("p", { class: "muted" }, "No agents yet (POST /v1/agents makes one).") : el("ul", { class: "agents", "aria-label": "Agents, oldest first" }, ...page.items.map((agent) => this.row(agent))));
    this.pager.shown(page.nextCursor);
  }

  /**
   * Shows an agent's definition: `version` for the one a session is bound to (readable even after
   * the agent was deleted), else its latest.
   */
  async show(agentId: string, version?: number): Promise<void> {
    const { client } = this.context;
    const agent = await this.context.attempt("Read agent", () => (version === undefined ? client.agents.get(agentId) : client.agents.version(agentId, version)));
    if (!agent) return;
    this.selected = agentId;
    for (const button of this.root.querySelectorAll<HTMLButtonElement>("button[data-agent]")) button.setAttribute("aria-current", String(button.dataset.agent === agentId));
    this.detail.hidden = false;
    replace(
      this.detail,
      el("h3", { id: "agent-title", "data-agent": agent.id, "data-version": agent.version }, `Agent ${agent.name ?? agent.id} @ ${agent.version}`),
      el(
        "dl",
        { class: "facts" },
        el("dt", {}, "Id"), el("dd", {}, agent.id),
        el("dt", {}, "Model"), el("dd", {}, modelText(agent)),
        el("dt", {}, "Created"), el("dd", {}, time(agent.createdAt)),
        el("dt", {}, "This version"), el("dd", {}, time(agent.updatedAt ?? agent.createdAt)),
        agent.deletedAt !== undefined && el("dt", {}, "Deleted"),
        agent.deletedAt !== undefined && el("dd", { class: "warn" }, time(agent.deletedAt)),
      ),
      el("div", { class: "button-row" }, el("button", { type: "button", on: { click: () => this.handlers.onSessions(agent.id) } }, `Sessions of ${agent.id}`)),
      jsonBlock(agent),
    );
  }

  private row(agent: Agent): HTMLLIElement {
    return el(
      "li",
      {},
      el(
        "button",
        { type: "button", class: "list-row agent-row", "data-agent": agent.id, "aria-current": String(agent.id === this.selected), on: { click: () => void this.show(agent.id) } },
        el("strong", {}, agent.name ?? agent.id),
        el("span", { class: "muted" }, `${agent.id} · @ ${agent.version} · ${modelText(agent)}`),
        el("span", { class: "muted row-details" }, `updated ${time(agent.updatedAt ?? agent.createdAt)}`),
      ),
    );
  }
}

const modelText = (agent: Agent): string => (agent.model ? `${agent.model.provider}/${agent.model.modelId}` : "the tenant's default model");
