import type { ModelCatalogEntry } from "../client/types.ts";
import type { LaneWatch } from "../client/watch.ts";
import type { HarnessEvent, LaneSnapshot, RunningToolRow } from "../schema/lane.ts";
import type { InspectorContext } from "./context.ts";
import { el, field, replace } from "./dom.ts";
import { LIVE_PARTS } from "./lane-live.ts";

/** Events after which the session's entries or branches changed: the tree is read again. */
const TREE_EVENTS: ReadonlySet<HarnessEvent["type"]> = new Set(["entry_added", "run_end", "compaction_end", "navigation_end"]);

export interface LaneHandlers {
  /** The lane's entries or tip changed (debounced by the caller). */
  onTreeChange: () => void;
  onTip: (tipId: string | null) => void;
}

/**
 * A lane: its live view through the WebSocket watch (the SDK's `watchLane`, which folds events into
 * the snapshot with the shared `reduceLaneSnapshot`, acknowledges bytes and reconnects), and the
 * controls that act on it through REST.
 */
export class LanePanel {
  private watch: LaneWatch | undefined;
  private target: { sessionId: string; lane: string } | undefined;
  private readonly parts = new Map<string, { host: HTMLElement; key: string | undefined }>();
  private readonly answers = el("div", { class: "client-tools" });
  /** The open answer forms by operation and tool call: kept while their call waits, with what was typed. */
  private readonly answerForms = new Map<string, HTMLFormElement>();
  private readonly statusLine = el("span", { class: "muted", id: "watch-status" }, "not watching");
  private frame: number | undefined;
  private models: ModelCatalogEntry[] = [];
  /** Counts opens and closes: an open that awaited the model list goes on only if none came since. */
  private generation = 0;

  constructor(
    private readonly root: HTMLElement,
    private readonly context: InspectorContext,
    private readonly handlers: LaneHandlers,
  ) {}

  /** The page's own fold of the watched lane (what the browser test compares with `GET …/snapshot`). */
  snapshot(): LaneSnapshot | undefined {
    return this.watch?.snapshot();
  }

  seq(): number | undefined {
    return this.watch?.seq();
  }

  async open(sessionId: string, lane: string): Promise<void> {
    this.close();
    const generation = this.generation;
    this.target = { sessionId, lane };
    this.root.hidden = false;
    if (this.models.length === 0) this.models = (await this.context.attempt("List models", () => this.context.client.models())) ?? [];
    // Another open (even of this same lane) or a close came while the list loaded: that one wins,
    // else both would start a watch and the first would never be closed.
    if (generation !== this.generation) return;
    this.render(sessionId, lane);
    const watch = this.context.client.watchLane(sessionId, lane, {
      onError: (error) => this.context.report(`Watch: ${error.message}`, "error"),
    });
    this.watch = watch;
    // The first snapshot is the state the session panel just read. Every later one follows a
    // reconnect or a resnapshot, after which events may have been missed (entries written while
    // the socket was away): the tree is read again.
    let snapshots = 0;
    watch.on((update) => {
      if (update.type === "status") this.statusLine.textContent = update.code === undefined ? update.status : `${update.status} (close ${update.code})`;
      if (update.type === "event" && TREE_EVENTS.has(update.event.type)) this.handlers.onTreeChange();
      if (update.type === "snapshot" && snapshots++ > 0) this.handlers.onTreeChange();
      if (update.type === "snapshot" || update.type === "event") this.schedule();
    });
  }

  close(): void {
    this.generation += 1;
    delete this.root.dataset.seq;
    delete this.root.dataset.session;
    this.watch?.close();
    this.watch = undefined;
    this.answerForms.clear();
    replace(this.answers);
    if (this.frame !== undefined) cancelAnimationFrame(this.frame);
    this.frame = undefined;
  }

  /** Redraws at most once a frame: a fast stream updates the page at the screen's pace. */
  private schedule(): void {
    if (this.frame !== undefined) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = undefined;
      this.draw();
    });
  }

  private draw(): void {
    const snapshot = this.watch?.snapshot();
    const seq = this.watch?.seq();
    if (!snapshot || seq === undefined) return;
    for (const [name, part] of Object.entries(LIVE_PARTS)) {
      const slot = this.parts.get(name);
      if (!slot) continue;
      const key = part.key(snapshot);
      if (key === slot.key) continue;
      slot.key = key;
      replace(slot.host, ...part.draw(snapshot));
    }
    this.drawAnswers(snapshot.operation?.id, snapshot.operation?.runningTools ?? []);
    this.handlers.onTip(snapshot.tipId);
    // Set last: a test that waits for this seq finds the page drawn from it.
    this.root.dataset.seq = String(seq);
    this.root.dataset.session = this.target?.sessionId ?? "";
    this.root.dataset.operation = snapshot.operation?.status ?? "idle";
  }

  private render(sessionId: string, lane: string): void {
    this.parts.clear();
    const section = (name: string, title: string) => {
      const host = el("div", { class: `live live-${name}`, "aria-live": name === "streaming" ? "off" : "polite" });
      this.parts.set(name, { host, key: undefined });
      return el("div", {}, el("h3", {}, title), host);
    };
    replace(
      this.root,
      el("h2", { id: "lane-title" }, `Lane ${lane}`),
      el("p", {}, "Watch: ", this.statusLine),
      section("state", "State"),
      section("operation", "Current operation"),
      section("streaming", "Streaming answer"),
      section("tools", "Tools"),
      this.answers,
      section("queue", "Queue"),
      section("result", "Last result"),
      el("h3", {}, "Controls"),
      this.promptForm(sessionId, lane),
      this.queueForm(sessionId, lane),
      el(
        "div",
        { class: "button-row" },
        el("button", { type: "button", id: "abort", on: { click: () => void this.context.attempt("Abort", () => this.context.client.operations.abortCurrent(sessionId, lane, { wait: 10 })) } }, "Abort"),
        el("button", { type: "button", id: "resume", on: { click: () => void this.context.attempt("Resume", () => this.context.client.operations.resumeCurrent(sessionId, lane, { wait: 0 })) } }, "Resume"),
        el("button", { type: "button", id: "compact", on: { click: () => void this.context.attempt("Compact", () => this.context.client.operations.compact(sessionId, lane, { wait: 0 })) } }, "Compact"),
      ),
    );
  }

  private promptForm(sessionId: string, lane: string): HTMLFormElement {
    const current = this.watch?.snapshot()?.configuration.model;
    const models = el(
      "select",
      { id: "prompt-model", name: "model" },
      el("option", { value: "" }, "the lane's model"),
      ...this.models.map((model) => {
        const id = `${model.provider}/${model.modelId}`;
        return el("option", { value: id, selected: current !== undefined && id === `${current.provider}/${current.modelId}` }, id);
      }),
    );
    const form = el(
      "form",
      { class: "stack-form", "aria-label": "Send a prompt" },
      el("label", { for: "prompt-text" }, "Prompt"),
      el("textarea", { id: "prompt-text", name: "prompt", rows: 3, required: true }),
      el("label", { for: "prompt-model" }, "Model"),
      models,
      el("button", { type: "submit" }, "Send prompt"),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const prompt = field(form, "prompt");
      const model = field(form, "model");
      void this.context.attempt("Prompt", async () => {
        const { client } = this.context;
        const [provider, ...rest] = model.split("/");
        const configured = this.watch?.snapshot()?.configuration.model;
        // The model is the lane's configuration: change it first when another one was chosen.
        if (provider && rest.length > 0 && `${configured?.provider}/${configured?.modelId}` !== model) {
          await client.lanes.configure(sessionId, lane, { model: { provider, modelId: rest.join("/") } });
        }
        await client.operations.prompt(sessionId, lane, prompt, { wait: 0 });
        form.reset();
        models.value = model;
      });
    });
    return form;
  }

  private queueForm(sessionId: string, lane: string): HTMLFormElement {
    const form = el(
      "form",
      { class: "stack-form", "aria-label": "Queue a message" },
      el("label", { for: "queue-text" }, "Message for the queue"),
      el("textarea", { id: "queue-text", name: "message", rows: 2, required: true }),
    );
    const kinds = [
      ["steer", "Steer"],
      ["followUp", "Follow up"],
      ["nextRun", "Next run"],
    ] as const;
    const row = el("div", { class: "button-row" });
    for (const [kind, label] of kinds) {
      row.append(
        el(
          "button",
          {
            type: "button",
            id: `queue-${kind}`,
            on: {
              click: () => {
                if (!form.reportValidity()) return;
                const message = field(form, "message");
                void this.context.attempt(label, async () => {
                  const { client } = this.context;
                  if (kind === "steer") await client.queue.steer(sessionId, lane, message);
                  else if (kind === "followUp") await client.queue.followUp(sessionId, lane, message);
                  else await client.queue.nextRun(sessionId, lane, message);
                  form.reset();
                });
              },
            },
          },
          label,
        ),
      );
    }
    form.append(row);
    form.addEventListener("submit", (event) => event.preventDefault());
    return form;
  }

  /**
   * A form per client tool call waiting for its answer. A form stays in place while its call
   * waits: answering one of two parallel calls leaves the other's typed text and focus alone.
   */
  private drawAnswers(operationId: string | undefined, rows: readonly RunningToolRow[]): void {
    const target = this.target;
    const waiting = new Map<string, () => HTMLFormElement>();
    if (target && operationId !== undefined) {
      for (const row of rows) {
        if (row.status === "running" && row.executor === "client") waiting.set(`${operationId}/${row.toolCallId}`, () => this.answerForm(target.sessionId, target.lane, operationId, row));
      }
    }
    for (const [key, form] of this.answerForms) {
      if (waiting.has(key)) continue;
      form.remove();
      this.answerForms.delete(key);
    }
    for (const [key, build] of waiting) {
      if (this.answerForms.has(key)) continue;
      const form = build();
      this.answerForms.set(key, form);
      this.answers.append(form);
    }
    if (this.answerForms.size === 0) replace(this.answers);
    else if (!this.answers.firstElementChild?.matches("h3")) this.answers.prepend(el("h3", {}, "Answer client tools"));
  }

  private answerForm(sessionId: string, lane: string, operationId: string, row: RunningToolRow): HTMLFormElement {
    const id = `answer-${row.toolCallId}`;
    const form = el(
      "form",
      { class: "stack-form", "aria-label": `Answer ${row.toolName}`, "data-answer": row.toolCallId },
      el("label", { for: id }, `${row.toolName}: result text`),
      el("textarea", { id, name: "text", rows: 2, required: true }),
      el("label", { class: "check" }, el("input", { type: "checkbox", name: "isError" }), " an error result"),
      el("button", { type: "submit" }, "Send result"),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const text = field(form, "text");
      const isError = new FormData(form).has("isError");
      void this.context.attempt("Answer tool", () => this.context.client.tools.submitResult(sessionId, lane, operationId, row.toolCallId, { content: [{ type: "text", text }], isError }));
    });
    return form;
  }
}
