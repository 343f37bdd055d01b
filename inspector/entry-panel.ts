import type { Entry } from "../schema/entries.ts";
import type { InspectorContext } from "./context.ts";
import { el, field, jsonBlock, replace, time } from "./dom.ts";
import { entryKind } from "./entry-kind.ts";

export interface EntryTarget {
  sessionId: string;
  lane: string | undefined;
}

/**
 * The entry chosen in the tree: its whole content, its label (read and set), and the two actions
 * that start from an entry: navigate the watched lane to it, or fork a new session up to it.
 */
export class EntryPanel {
  constructor(
    private readonly root: HTMLElement,
    private readonly context: InspectorContext,
    private readonly handlers: { onLabel: (entryId: string, label: string | null) => void; onForked: (sessionId: string) => void; onNavigated: () => void },
  ) {}

  hide(): void {
    this.root.hidden = true;
    this.root.replaceChildren();
  }

  async show(entry: Entry, target: EntryTarget): Promise<void> {
    this.root.hidden = false;
    const labelInput = el("input", { id: "entry-label", name: "label", maxlength: 200, placeholder: "no label" });
    const labelForm = el(
      "form",
      { class: "inline-form", "aria-label": "Entry label" },
      el("label", { for: "entry-label" }, "Label"),
      labelInput,
      el("button", { type: "submit" }, "Save label"),
    );
    labelForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const label = field(labelForm, "label").trim();
      void this.context.attempt("Save label", async () => {
        const { client } = this.context;
        if (label === "") await client.entries.deleteLabel(target.sessionId, entry.id);
        else await client.entries.setLabel(target.sessionId, entry.id, label);
        this.handlers.onLabel(entry.id, label === "" ? null : label);
        this.context.report(label === "" ? "Label removed" : "Label saved");
      });
    });
    const summarize = el("input", { type: "checkbox", id: "navigate-summarize", name: "summarize" });
    const lane = target.lane;
    replace(
      this.root,
      el("h2", { id: "entry-title" }, `Entry: ${entryKind(entry).name}`),
      el("p", { class: "muted" }, `${entry.id} · seq ${entry.seq} · ${time(entry.timestamp)} · parent ${entry.parentId ?? "none (root)"}`),
      labelForm,
      lane === undefined
        ? el("p", { class: "muted" }, "Add a lane to navigate or fork from here.")
        : el(
            "div",
            { class: "button-row" },
            el("button", { type: "button", id: "navigate-here", on: { click: () => void this.navigate(entry, target.sessionId, lane, summarize.checked) } }, `Navigate lane ${lane} here`),
            el("label", { class: "check" }, summarize, " summarize the branch left behind"),
            el("button", { type: "button", id: "fork-here", on: { click: () => void this.fork(entry, target.sessionId, lane) } }, `Fork ${lane} up to here`),
          ),
      el("h3", {}, "Content"),
      jsonBlock(entry),
    );
    const current = await this.context.attempt("Read label", () => this.context.client.entries.getLabel(target.sessionId, entry.id));
    if (current?.label) labelInput.value = current.label;
  }

  private async navigate(entry: Entry, sessionId: string, lane: string, summarize: boolean): Promise<void> {
    const outcome = await this.context.attempt("Navigate", () => this.context.client.operations.navigate(sessionId, lane, entry.id, { summarize, wait: 30 }));
    if (!outcome) return;
    this.context.report(`Lane ${lane} navigated to ${entry.id}`);
    this.handlers.onNavigated();
  }

  private async fork(entry: Entry, sessionId: string, lane: string): Promise<void> {
    const fork = await this.context.attempt("Fork", () => this.context.client.sessions.fork(sessionId, { scope: "branch", branch: lane, entryId: entry.id, position: "at" }));
    if (fork) this.handlers.onForked(fork.id);
  }
}
