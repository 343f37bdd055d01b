import type { AgentVersionRef } from "../schema/agent-binding.ts";
import type { Entry } from "../schema/entries.ts";
import type { Session } from "../schema/session.ts";
import { agentVersionText, metadataText } from "./agent-format.ts";
import type { InspectorContext } from "./context.ts";
import { dollars, el, field, replace, time } from "./dom.ts";
import { readWholeSession } from "./session-read.ts";
import { renderTree } from "./tree-view.ts";

/** The tree shows at most this many entries (the oldest first); a larger session says so. */
const MAX_ENTRIES = 2000;
/** Labels are read one entry at a time (there is no listing of them): the newest this many. */
const MAX_LABELS = 120;
const LABEL_READERS = 6;

export interface SessionState {
  session: Session;
  entries: Entry[];
  complete: boolean;
  labels: Map<string, string>;
  /** Entries whose label was read already (labelled or not). */
  labelsRead: Set<string>;
}

/**
 * One session: its name and statistics, its lanes (pick the one to watch, or add one), and the
 * entry tree drawn as a graph (tree-view.ts). Entries are read a page at a time in commit order;
 * the tree is redrawn when the watched lane adds entries.
 */
export class SessionPanel {
  state: SessionState | undefined;
  private selectedEntry: string | undefined;
  private laneTipId: string | null = null;
  private lane: string | undefined;
  /** The session last asked for: a late answer about another one is not drawn. */
  private wanted: string | undefined;
  /** Reads started, and the one whose answer is drawn: an answer older than that one is not. */
  private reads = 0;
  private drawnRead = 0;
  private readonly treeHost = el("div", { class: "tree-host" });
  private readonly title = el("h2", { id: "session-title" });
  private readonly facts = el("dl", { class: "facts" });
  private readonly cutNote = el("p", { class: "muted", hidden: true }, `Showing the oldest ${MAX_ENTRIES} entries.`);
  private readonly laneSelect: HTMLSelectElement;
  private readonly laneForm: HTMLFormElement;

  constructor(
    private readonly root: HTMLElement,
    private readonly context: InspectorContext,
    private readonly handlers: { onLane: (lane: string) => void; onEntry: (entry: Entry) => void; onForked: (sessionId: string) => void; onAgent: (agent: AgentVersionRef) => void },
  ) {
    this.laneSelect = el("select", { id: "lane-select", name: "lane", on: { change: () => this.pickLane(this.laneSelect.value) } });
    this.laneForm = this.newLaneForm();
  }

  /**
   * Reads the session, and its entries: all of them (oldest first, a page at a time) when it is
   * another session than the one shown, else only the ones written since (newest first, until an
   * entry already shown), so a redraw after each run costs about what the run wrote.
   *
   * Answers can come late (a refresh of the session just left, on a slow network): undefined, and
   * nothing drawn, when another session was asked for since or a later read was drawn already.
   */
  async load(sessionId: string): Promise<SessionState | undefined> {
    const { client } = this.context;
    this.wanted = sessionId;
    const read = ++this.reads;
    const previous = this.state?.session.id === sessionId ? this.state : undefined;
    const loaded = await this.context.attempt("Read session", async () => {
      const session = await readWholeSession(client, sessionId);
      const { entries, complete } = previous ? await this.newerEntries(previous) : await this.allEntries(sessionId);
      return { session, entries, complete, labels: previous?.labels ?? new Map<string, string>(), labelsRead: previous?.labelsRead ?? new Set<string>() };
    });
    if (!loaded || sessionId !== this.wanted || read < this.drawnRead) return undefined;
    this.drawnRead = read;
    if (!previous) {
      this.selectedEntry = undefined;
      this.laneForm.reset();
    }
    this.state = loaded;
    this.lane = this.lane && loaded.session.lanes.some((lane) => lane.name === this.lane) ? this.lane : (loaded.session.lanes.find((lane) => lane.name === "main") ?? loaded.session.lanes[0])?.name;
    this.laneTipId = loaded.session.lanes.find((lane) => lane.name === this.lane)?.tipId ?? null;
    this.render();
    void this.readLabels(loaded);
    return loaded;
  }

  private async allEntries(sessionId: string): Promise<{ entries: Entry[]; complete: boolean }> {
    const entries: Entry[] = [];
    for await (const entry of this.context.client.entries.all(sessionId, { order: "asc", limit: 500 })) {
      if (entries.length === MAX_ENTRIES) return { entries, complete: false };
      entries.push(entry);
    }
    return { entries, complete: true };
  }

  private async newerEntries(previous: SessionState): Promise<{ entries: Entry[]; complete: boolean }> {
    // A tree cut at MAX_ENTRIES shows the oldest ones: newer entries are not drawn.
    if (!previous.complete) return { entries: previous.entries, complete: false };
    const known = new Set(previous.entries.map((entry) => entry.id));
    const added: Entry[] = [];
    for await (const entry of this.context.client.entries.all(previous.session.id, { order: "desc", limit: 100 })) {
      if (known.has(entry.id)) break;
      added.push(entry);
      if (previous.entries.length + added.length > MAX_ENTRIES) return this.allEntries(previous.session.id);
    }
    return { entries: [...previous.entries, ...added.reverse()], complete: true };
  }

  get currentLane(): string | undefined {
    return this.lane;
  }

  /** The live tip of the watched lane (from its watch): marked in the tree. */
  setLaneTip(tipId: string | null): void {
    if (tipId === this.laneTipId) return;
    this.laneTipId = tipId;
    this.drawTree();
  }

  selectEntry(entryId: string | undefined): void {
    this.selectedEntry = entryId;
    this.drawTree();
  }

  setLabel(entryId: string, label: string | null): void {
    if (!this.state) return;
    if (label === null) this.state.labels.delete(entryId);
    else this.state.labels.set(entryId, label);
    this.drawTree();
  }

  /**
   * Draws what the session's read changed: the title, the facts, the lane list and the tree. The
   * controls are built once and stay, so a redraw after each run leaves a half-typed lane name,
   * and the focus, where they were.
   */
  private render(): void {
    const state = this.state;
    if (!state) return;
    const { session } = state;
    const usage = session.stats.usage;
    if (!this.root.contains(this.treeHost)) this.root.replaceChildren(...this.layout());
    this.title.textContent = session.name ?? session.id;
    replace(
      this.facts,
      el("dt", {}, "Id"), el("dd", {}, session.id),
      el("dt", {}, "Created"), el("dd", {}, time(session.createdAt)),
      session.parentSessionId !== undefined && el("dt", {}, "Forked from"),
      session.parentSessionId !== undefined && el("dd", {}, session.parentSessionId),
      el("dt", {}, "Agent"),
      el("dd", { "data-agent": session.agent ? agentVersionText(session.agent) : "" }, session.agent ? this.agentLink(session.agent) : "none"),
      el("dt", {}, "Metadata"), el("dd", { "data-metadata": "" }, metadataText(session.metadata)),
      el("dt", {}, "Messages"), el("dd", {}, session.stats.messageCount),
      el("dt", {}, "Usage"), el("dd", {}, `${usage.totalTokens} tokens · ${dollars(usage.cost.total)}`),
      el("dt", {}, "Branches"), el("dd", {}, session.branches.map((branch) => branch.name).join(", ") || "none"),
    );
    const options = session.lanes.map((lane) => ({ value: lane.name, text: lane.operation ? `${lane.name} (${lane.operation.kind} ${lane.operation.status})` : lane.name }));
    const optionsKey = JSON.stringify(options);
    if (this.laneSelect.dataset.options !== optionsKey) {
      replace(this.laneSelect, ...options.map((option) => el("option", { value: option.value }, option.text)));
      this.laneSelect.dataset.options = optionsKey;
    }
    this.laneSelect.value = this.lane ?? "";
    this.cutNote.hidden = state.complete;
    this.drawTree();
  }

  /** The session's agent version: opens that version's definition in the agents panel. */
  private agentLink(agent: AgentVersionRef): HTMLButtonElement {
    const text = agentVersionText(agent);
    return el("button", { type: "button", class: "link", "aria-label": `Agent ${text}`, on: { click: () => this.handlers.onAgent(agent) } }, text);
  }

  /** The panel's parts in order: built once, filled by render(). */
  private layout(): Node[] {
    return [
      this.title,
      this.facts,
      el("div", { class: "inline-form" }, el("label", { for: "lane-select" }, "Watch lane"), this.laneSelect),
      this.laneForm,
      el(
        "div",
        { class: "button-row" },
        el("button", { type: "button", on: { click: () => void (this.wanted !== undefined && this.load(this.wanted)) } }, "Refresh"),
        el("button", { type: "button", on: { click: () => void this.forkTree() } }, "Fork whole session"),
      ),
      el("h3", {}, "Entry tree"),
      el(
        "p",
        { class: "legend muted" },
        el("span", { class: "swatch kind-user" }, "● user"), " ",
        el("span", { class: "swatch kind-assistant" }, "● assistant"), " ",
        el("span", { class: "swatch kind-tool" }, "● tool result"), " ",
        el("span", { class: "swatch kind-compaction" }, "■ compaction"), " ",
        el("span", { class: "swatch kind-summary" }, "◆ branch summary"), " ",
        el("span", { class: "swatch kind-custom" }, "▲ custom"), " ",
        "⎇ branch tip · ringed: the watched lane's tip",
      ),
      this.cutNote,
      this.treeHost,
    ];
  }

  /** The entry of the tree row the keyboard is on, if it is on the tree. */
  private focusedRow(): string | undefined {
    const active = document.activeElement;
    return active !== null && this.treeHost.contains(active) ? (active.getAttribute("data-entry") ?? undefined) : undefined;
  }

  /**
   * Redraws replace every row (a run's events, its end, each label read), and a removed element
   * takes the focus with it: a keyboard user on the tree keeps their row and their focus.
   */
  private drawTree(focusId: string | undefined = this.focusedRow()): void {
    const state = this.state;
    if (!state) return;
    const onSelect = (entryId: string) => {
      const entry = state.entries.find((candidate) => candidate.id === entryId);
      if (!entry) return;
      this.selectedEntry = entryId;
      this.drawTree(entryId);
      this.handlers.onEntry(entry);
    };
    const tree =
      state.entries.length === 0
        ? el("p", { class: "muted" }, "No entries yet: prompt the lane to start the conversation.")
        : renderTree({ entries: state.entries, branches: state.session.branches, labels: state.labels, lane: this.lane, laneTipId: this.laneTipId, selectedId: this.selectedEntry, focusId, onSelect });
    replace(this.treeHost, tree);
    this.treeHost.dataset.entries = String(state.entries.length);
    if (focusId !== undefined) this.treeHost.querySelector<SVGGElement>(`g[data-entry="${CSS.escape(focusId)}"]`)?.focus();
  }

  private pickLane(lane: string): void {
    this.lane = lane;
    this.laneSelect.value = lane;
    this.laneTipId = this.state?.session.lanes.find((info) => info.name === lane)?.tipId ?? null;
    this.drawTree();
    this.handlers.onLane(lane);
  }

  private newLaneForm(): HTMLFormElement {
    const form = el(
      "form",
      { class: "inline-form", "aria-label": "Add a lane" },
      el("label", { for: "new-lane-name" }, "New lane"),
      el("input", { id: "new-lane-name", name: "lane", required: true, pattern: "[A-Za-z0-9_\\-]{1,64}", placeholder: "name" }),
      el("label", { for: "new-lane-at" }, "at entry"),
      el("input", { id: "new-lane-at", name: "at", placeholder: "entry id (empty: root)", pattern: "[A-Za-z0-9_\\-]{1,64}" }),
      el("button", { type: "submit" }, "Add lane"),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const state = this.state;
      if (!state) return;
      const lane = field(form, "lane");
      const at = field(form, "at");
      void this.context.attempt("Add lane", async () => {
        await this.context.client.lanes.put(state.session.id, lane, { createAt: at === "" ? null : at });
        form.reset();
        // Another session was opened while the lane was being added: that one stays.
        if (this.wanted !== state.session.id) return;
        this.lane = lane;
        await this.load(state.session.id);
        // Whichever read was drawn last (a refresh the lane's creation set off may have overtaken
        // this one, and a read begun before the PUT, drawn in between, knew no such lane and fell
        // back to main), the new lane is the one to watch once the drawn session has it.
        if (this.wanted === state.session.id && this.state?.session.lanes.some((info) => info.name === lane)) this.pickLane(lane);
      });
    });
    return form;
  }

  private async forkTree(): Promise<void> {
    const state = this.state;
    if (!state) return;
    const fork = await this.context.attempt("Fork session", () => this.context.client.sessions.fork(state.session.id, { scope: "tree" }));
    if (fork) this.handlers.onForked(fork.id);
  }

  private async readLabels(state: SessionState): Promise<void> {
    const queue = state.entries.slice(-MAX_LABELS).map((entry) => entry.id).filter((id) => !state.labelsRead.has(id));
    for (const id of queue) state.labelsRead.add(id);
    let changed = false;
    const reader = async () => {
      for (let id = queue.pop(); id !== undefined; id = queue.pop()) {
        try {
          const { label } = await this.context.client.entries.getLabel(state.session.id, id);
          if (label !== null) {
            state.labels.set(id, label);
            changed = true;
          }
        } catch {
          // A label that cannot be read is left out of the drawing (and read again next time).
          state.labelsRead.delete(id);
        }
      }
    };
    await Promise.all(Array.from({ length: LABEL_READERS }, reader));
    if (changed && this.state === state) this.drawTree();
  }
}
