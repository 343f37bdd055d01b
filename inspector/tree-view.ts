import type { Entry } from "../schema/entries.ts";
import type { BranchListing } from "../schema/session.ts";
import { el, svg } from "./dom.ts";
import { entryKind, entryPreview } from "./entry-kind.ts";
import { layoutTree, pathToRoot } from "./tree-layout.ts";

const ROW = 30;
const COLUMN = 20;
const RADIUS = 6;

export interface TreeViewInput {
  entries: readonly Entry[];
  branches: readonly BranchListing[];
  labels: ReadonlyMap<string, string>;
  /** The watched lane: its path keeps the first column and its tip is marked. */
  lane: string | undefined;
  laneTipId: string | null;
  selectedId: string | undefined;
  /** The row that keeps the tab stop over the selected one: where the keyboard was before a redraw. */
  focusId?: string | undefined;
  onSelect: (entryId: string) => void;
}

/**
 * The entry tree as an SVG graph (tree-layout.ts): a node per entry shaped by its kind, edges to
 * parents, each row's kind, first words, label and the branches whose tip it is (a lane's branch
 * marked as such). Every row is a button, and the tree is one tab stop: the arrow keys, Home and
 * End move between rows, Enter or Space opens the entry.
 */
export function renderTree(input: TreeViewInput): HTMLElement {
  const layout = layoutTree(input.entries, pathToRoot(input.entries, input.laneTipId));
  const byId = new Map(input.entries.map((entry) => [entry.id, entry]));
  const tips = new Map<string, BranchListing[]>();
  for (const branch of input.branches) if (branch.tipId !== null) tips.set(branch.tipId, [...(tips.get(branch.tipId) ?? []), branch]);
  const onPath = pathToRoot(input.entries, input.laneTipId);
  const textX = layout.columns * COLUMN + 12;
  const x = (column: number) => column * COLUMN + COLUMN / 2 + 2;
  const y = (row: number) => row * ROW + ROW / 2;
  const graph = svg("svg", { class: "tree", width: textX + 900, height: Math.max(layout.nodes.length, 1) * ROW, role: "group", "aria-label": "Entry tree, oldest first" });
  for (const { from, to } of layout.edges) {
    const path = from.column === to.column ? `M${x(from.column)},${y(from.row)} V${y(to.row)}` : `M${x(from.column)},${y(from.row)} C${x(to.column)},${y(from.row)} ${x(to.column)},${y(from.row)} ${x(to.column)},${y(to.row)}`;
    graph.append(svg("path", { d: path, class: onPath.has(to.id) ? "edge edge-lane" : "edge" }));
  }
  const rows: SVGGElement[] = [];
  const focusId = [input.focusId, input.selectedId].find((id) => id !== undefined && byId.has(id)) ?? layout.nodes.at(-1)?.id;
  for (const placed of layout.nodes) {
    const entry = byId.get(placed.id);
    if (!entry) continue;
    const kind = entryKind(entry);
    const label = input.labels.get(entry.id);
    const branchTags = (tips.get(entry.id) ?? []).map((branch) => (branch.lane ? `⎇ ${branch.name} (lane)` : `⎇ ${branch.name}`));
    const isLaneTip = entry.id === input.laneTipId;
    const description = [kind.name, label && `label ${label}`, ...branchTags, isLaneTip && "watched lane's tip", entryPreview(entry, 200)].filter(Boolean).join(", ");
    const row = svg("g", {
      class: `row ${kind.className}${entry.id === input.selectedId ? " selected" : ""}${isLaneTip ? " lane-tip" : ""}`,
      role: "button",
      tabindex: entry.id === focusId ? 0 : -1,
      "data-entry": entry.id,
      "data-kind": kind.className,
      "aria-label": description,
      "aria-pressed": String(entry.id === input.selectedId),
    });
    row.append(svg("rect", { class: "row-hit", x: 0, y: placed.row * ROW, width: textX + 900, height: ROW }));
    row.append(nodeShape(kind.className, x(placed.column), y(placed.row)));
    const text = svg("text", { x: textX, y: y(placed.row) + 4 });
    text.append(svg("tspan", { class: "row-kind" }, kind.name));
    if (label) text.append(svg("tspan", { class: "row-label", dx: 8 }, `label: ${label}`));
    for (const tag of branchTags) text.append(svg("tspan", { class: "row-branch", dx: 8 }, tag));
    text.append(svg("tspan", { class: "row-preview", dx: 8 }, entryPreview(entry, 70)));
    row.append(svg("title", {}, description), text);
    const open = () => input.onSelect(entry.id);
    row.addEventListener("click", open);
    row.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        open();
        return;
      }
      const index = rows.indexOf(row);
      const moves: Record<string, number> = { ArrowDown: index + 1, ArrowUp: index - 1, Home: 0, End: rows.length - 1 };
      const next = moves[event.key];
      const target = next === undefined ? undefined : rows[next];
      if (!target) return;
      event.preventDefault();
      row.setAttribute("tabindex", "-1");
      target.setAttribute("tabindex", "0");
      target.focus();
    });
    rows.push(row);
    graph.append(row);
  }
  return el("div", { class: "tree-scroll" }, graph);
}

function nodeShape(className: string, cx: number, cy: number): SVGElement {
  switch (className) {
    case "kind-compaction":
      return svg("rect", { class: "node", x: cx - RADIUS, y: cy - RADIUS, width: RADIUS * 2, height: RADIUS * 2 });
    case "kind-summary":
      return svg("path", { class: "node", d: `M${cx},${cy - RADIUS - 1} L${cx + RADIUS + 1},${cy} L${cx},${cy + RADIUS + 1} L${cx - RADIUS - 1},${cy} Z` });
    case "kind-custom":
      return svg("path", { class: "node", d: `M${cx},${cy - RADIUS} L${cx + RADIUS},${cy + RADIUS} L${cx - RADIUS},${cy + RADIUS} Z` });
    default:
      return svg("circle", { class: "node", cx, cy, r: RADIUS });
  }
}
