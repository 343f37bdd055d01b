import type { Entry } from "../schema/entries.ts";
import type { UsageRow } from "../schema/usage.ts";
import type { InspectorContext } from "./context.ts";
import { dollars, el, field, jsonBlock, replace } from "./dom.ts";

const LIST_PAGE = 50;
/** The ledger is summed from at most this many rows (pages of the usage route). */
const MAX_USAGE_ROWS = 5000;

interface ModelSum {
  requests: number;
  input: number;
  output: number;
  cost: number;
}

/**
 * A session's data: a value or a list by namespace and key (the API addresses them by name; it has
 * no listing of names), and the usage ledger summed per model. A ledger row names the entry it
 * paid for: an assistant message carries its provider and model; a compaction or branch summary
 * row is summed as "summaries".
 */
export class DataPanel {
  private usage: HTMLElement | undefined;
  private sessionId: string | undefined;

  constructor(
    private readonly root: HTMLElement,
    private readonly context: InspectorContext,
  ) {}

  async show(sessionId: string, entries: readonly Entry[]): Promise<void> {
    this.root.hidden = false;
    const output = el("div", { class: "data-output", "aria-live": "polite" });
    const usage = el("div", { class: "usage" }, el("p", { class: "muted" }, "Reading the usage ledger…"));
    this.usage = usage;
    this.sessionId = sessionId;
    replace(this.root, el("h2", { id: "data-title" }, "Values, lists and usage"), this.lookupForm(sessionId, output), output, el("h3", {}, "Usage per model"), usage);
    await this.refreshUsage(sessionId, entries);
  }

  /** Reads the ledger again (after the session changed) and redraws only its table. */
  async refreshUsage(sessionId: string, entries: readonly Entry[]): Promise<void> {
    const usage = this.usage;
    if (!usage || sessionId !== this.sessionId) return;
    const rows = await this.context.attempt("Read usage", () => this.ledger(sessionId));
    if (rows && sessionId === this.sessionId) replace(usage, usageTable(sumPerModel(rows, entries), rows.length));
  }

  private lookupForm(sessionId: string, output: HTMLElement): HTMLFormElement {
    const form = el(
      "form",
      { class: "inline-form", "aria-label": "Read a value or a list" },
      el("label", { for: "data-namespace" }, "Namespace"),
      el("input", { id: "data-namespace", name: "namespace", required: true, placeholder: "e.g. scripted" }),
      el("label", { for: "data-key" }, "Key"),
      el("input", { id: "data-key", name: "key", required: true, placeholder: "e.g. steps" }),
      el("button", { type: "submit", value: "value" }, "Read value"),
      el("button", { type: "submit", value: "list" }, "Read list"),
    );
    let cursor: string | undefined;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const namespace = field(form, "namespace");
      const key = field(form, "key");
      const which = event.submitter instanceof HTMLButtonElement ? event.submitter.value : "value";
      const { client } = this.context;
      if (which === "value") {
        void this.context.attempt("Read value", async () => replace(output, jsonBlock(await client.values.get(sessionId, namespace, key))));
        return;
      }
      cursor = undefined;
      const readPage = async (): Promise<void> => {
        const page = await client.lists.read(sessionId, namespace, key, { limit: LIST_PAGE, ...(cursor !== undefined && { cursor }) });
        cursor = page.nextCursor ?? undefined;
        const more = page.nextCursor === null ? null : el("button", { type: "button", on: { click: () => void this.context.attempt("Read list", readPage) } }, "Next page");
        replace(output, page.items.length === 0 ? el("p", { class: "muted" }, "Empty list.") : jsonBlock(page.items), more);
      };
      void this.context.attempt("Read list", readPage);
    });
    return form;
  }

  private async ledger(sessionId: string): Promise<UsageRow[]> {
    const rows: UsageRow[] = [];
    let fromSeq: number | undefined;
    do {
      const page = await this.context.client.usage(sessionId, { limit: 1000, ...(fromSeq !== undefined && { fromSeq }) });
      rows.push(...page.rows);
      fromSeq = page.nextFromSeq ?? undefined;
    } while (fromSeq !== undefined && rows.length < MAX_USAGE_ROWS);
    return rows;
  }
}

function sumPerModel(rows: readonly UsageRow[], entries: readonly Entry[]): Map<string, ModelSum> {
  const byId = new Map(entries.map((entry) => [entry.id, entry]));
  const sums = new Map<string, ModelSum>();
  for (const row of rows) {
    const entry = row.entryId === undefined ? undefined : byId.get(row.entryId);
    const model =
      entry?.type === "message" && entry.message.role === "assistant"
        ? `${entry.message.provider}/${entry.message.model}`
        : entry?.type === "compaction" || entry?.type === "branch_summary"
          ? "summaries"
          : row.adjustment
            ? "adjustments"
            : "other";
    const sum = sums.get(model) ?? { requests: 0, input: 0, output: 0, cost: 0 };
    sum.requests += 1;
    sum.input += row.usage.input + row.usage.cacheRead + row.usage.cacheWrite;
    sum.output += row.usage.output;
    sum.cost += row.usage.cost.total;
    sums.set(model, sum);
  }
  return sums;
}

function usageTable(sums: ReadonlyMap<string, ModelSum>, rowCount: number): Node {
  if (sums.size === 0) return el("p", { class: "muted" }, "No usage yet.");
  return el(
    "div",
    { class: "table-scroll" },
    el(
      "table",
      { "data-usage-rows": rowCount },
      el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Model"), el("th", { scope: "col" }, "Requests"), el("th", { scope: "col" }, "Input tokens"), el("th", { scope: "col" }, "Output tokens"), el("th", { scope: "col" }, "Cost"))),
      el(
        "tbody",
        {},
        ...[...sums].map(([model, sum]) => el("tr", {}, el("th", { scope: "row" }, model), el("td", {}, sum.requests), el("td", {}, sum.input), el("td", {}, sum.output), el("td", {}, dollars(sum.cost)))),
      ),
    ),
  );
}
