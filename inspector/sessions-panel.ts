import type { SessionSummary } from "../schema/api.ts";
import { agentVersionText } from "./agent-format.ts";
import type { InspectorContext } from "./context.ts";
import { dollars, el, field, replace, time } from "./dom.ts";
import { Pager } from "./pager.ts";

const PAGE_SIZE = 20;

interface RowDetails {
  messages: number;
  cost: number;
  tokens: number;
  lastActivity: number | null;
}

/**
 * The tenant's sessions, newest first, a page at a time (`GET /v1/sessions?order=desc`), or only
 * those bound to one agent (`?agent=<id>`). The index holds names, creation times and agent
 * versions; each listed row's usage, cost and last activity (its newest entry's time) are read
 * from the session itself, for the rows on screen only.
 */
export class SessionsPanel {
  private selected: string | undefined;
  private agentFilter: string | undefined;

  private readonly listHost = el("div", {});
  private readonly pager = new Pager("Session pages", ["Newer", "Older"], () => void this.load());
  private readonly filterNote = el("p", { class: "filter-note", hidden: true });

  constructor(
    private readonly root: HTMLElement,
    private readonly context: InspectorContext,
    private readonly onSelect: (sessionId: string) => void,
  ) {}

  /**
   * Reads the current page and redraws the list and the pager. The form and the pager are built
   * once, so paging with the keyboard keeps the focus on the button pressed.
   */
  async load(): Promise<void> {
    const { client } = this.context;
    const { cursor, ticket } = this.pager.cursors.ask();
    const agent = this.agentFilter;
    const page = await this.context.attempt("List sessions", () =>
      client.sessions.list({ limit: PAGE_SIZE, order: "desc", ...(cursor !== undefined && { cursor }), ...(agent !== undefined && { agent }) }),
    );
    // A page, or a filter, asked for since: this answer is not what the user is looking at.
    if (!page || !this.pager.cursors.isLatest(ticket)) return;
    if (!this.root.contains(this.listHost)) replace(this.root, el("h2", { id: "sessions-title" }, "Sessions"), this.createForm(), this.filterNote, this.listHost, this.pager.nav);
    const empty = agent === undefined ? "No sessions yet." : "No sessions on this page.";
    replace(this.listHost, page.items.length === 0 ? el("p", { class: "muted" }, empty) : el("ul", { class: "sessions", "aria-label": "Sessions, newest first" }, ...page.items.map((row) => this.row(row))));
    this.pager.shown(page.nextCursor);
  }

  /**
   * Lists only the sessions bound to `agentId` (any version), or all of them again (undefined),
   * from the first page. A filtered page may be short, even empty, with more after it.
   */
  filterByAgent(agentId: string | undefined): Promise<void> {
    this.agentFilter = agentId;
    this.pager.cursors.reset();
    this.filterNote.hidden = agentId === undefined;
    if (agentId !== undefined) {
      replace(
        this.filterNote,
        el("span", { "data-agent-filter": agentId }, `Bound to agent ${agentId}`),
        " ",
        el("button", { type: "button", on: { click: () => void this.filterByAgent(undefined) } }, "Show all sessions"),
      );
    }
    return this.load();
  }

  select(sessionId: string): void {
    this.selected = sessionId;
    for (const button of this.root.querySelectorAll<HTMLButtonElement>("button[data-session]")) {
      button.setAttribute("aria-current", String(button.dataset.session === sessionId));
    }
  }

  /** Reads one listed session's usage and last activity again (after its lane ran). */
  refreshRow(sessionId: string): void {
    const details = this.root.querySelector(`button[data-session="${CSS.escape(sessionId)}"] .row-details`);
    if (details instanceof HTMLElement) void this.fillDetails(sessionId, details);
  }

  private row(summary: SessionSummary): HTMLLIElement {
    const details = el("span", { class: "muted row-details" }, "…");
    const button = el(
      "button",
      { type: "button", class: "list-row session-row", "data-session": summary.id, "aria-current": String(summary.id === this.selected), on: { click: () => this.onSelect(summary.id) } },
      el("strong", {}, summary.name ?? summary.id),
      el("span", { class: "muted" }, `${summary.id} · created ${time(summary.createdAt)}`),
      summary.agent && el("span", { class: "muted row-agent", "data-agent": agentVersionText(summary.agent) }, `agent ${agentVersionText(summary.agent)}`),
      details,
    );
    void this.fillDetails(summary.id, details);
    return el("li", {}, button);
  }

  private async fillDetails(sessionId: string, host: HTMLElement): Promise<void> {
    const found = await this.details(sessionId);
    host.textContent = found ? `${found.messages} messages · ${found.tokens} tokens · ${dollars(found.cost)} · last activity ${time(found.lastActivity)}` : "unavailable";
  }

  private async details(sessionId: string): Promise<RowDetails | undefined> {
    const { client } = this.context;
    try {
      const [session, newest] = await Promise.all([client.sessions.get(sessionId), client.entries.list(sessionId, { order: "desc", limit: 1 })]);
      return {
        messages: session.stats.messageCount,
        cost: session.stats.usage.cost.total,
        tokens: session.stats.usage.totalTokens,
        lastActivity: newest.items[0]?.timestamp ?? session.createdAt,
      };
    } catch {
      return undefined;
    }
  }

  private createForm(): HTMLFormElement {
    const form = el(
      "form",
      { class: "inline-form", "aria-label": "Create a session" },
      el("label", { for: "new-session-name" }, "New session name"),
      el("input", { id: "new-session-name", name: "name", placeholder: "name (optional)", maxlength: 200 }),
      el("button", { type: "submit" }, "Create"),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const name = field(form, "name").trim();
      void this.context.attempt("Create session", async () => {
        const { client } = this.context;
        const session = await client.sessions.create(name ? { name } : {});
        // A session does nothing without a lane: the new one gets `main`, on the default model.
        await client.lanes.put(session.id, "main");
        form.reset();
        // The new session is bound to no agent: the whole list shows it, on its first page.
        await this.filterByAgent(undefined);
        this.onSelect(session.id);
      });
    });
    return form;
  }
}
