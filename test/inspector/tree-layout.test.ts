import { describe, expect, it } from "vitest";
import { layoutTree, pathToRoot, type TreeNodeInput } from "../../inspector/tree-layout.ts";

// The Inspector's tree layout: rows in commit order, a branch line per column.

const node = (id: string, parentId: string | null, seq: number): TreeNodeInput => ({ id, parentId, seq });
const cells = (nodes: readonly TreeNodeInput[], preferred?: Set<string>) =>
  Object.fromEntries(layoutTree(nodes, preferred).nodes.map((placed) => [placed.id, [placed.row, placed.column]]));

describe("layoutTree", () => {
  it("draws a linear conversation as one column, oldest at the top, whatever the input order", () => {
    expect(cells([node("c", "b", 3), node("a", null, 1), node("b", "a", 2)])).toEqual({ a: [0, 0], b: [1, 0], c: [2, 0] });
  });

  it("continues a parent's column into its oldest child and opens a new column for each other child", () => {
    const tree = [node("a", null, 1), node("b", "a", 2), node("c", "a", 3), node("d", "c", 4), node("e", "a", 5)];
    expect(cells(tree)).toEqual({ a: [0, 0], b: [1, 0], c: [2, 1], d: [3, 1], e: [4, 2] });
    const layout = layoutTree(tree);
    expect(layout.columns).toBe(3);
    expect(layout.edges.map((edge) => `${edge.from.id}>${edge.to.id}`)).toEqual(["a>b", "a>c", "c>d", "a>e"]);
  });

  it("keeps the preferred tip's path in the parent's column", () => {
    const tree = [node("a", null, 1), node("b", "a", 2), node("c", "a", 3), node("d", "c", 4)];
    expect(cells(tree, pathToRoot(tree, "d"))).toEqual({ a: [0, 0], b: [1, 1], c: [2, 0], d: [3, 0] });
  });

  it("keeps the preferred path in the first column when it starts at a root newer than another one", () => {
    // A lane added "at the root" (PUT …/lanes/{lane} { createAt: null }) in a session that has
    // entries starts a second root: main a → b, then the lane's x → y. The watched lane is x → y.
    const tree = [node("a", null, 1), node("b", "a", 2), node("x", null, 3), node("y", "x", 4)];
    expect(cells(tree, pathToRoot(tree, "y"))).toEqual({ a: [0, 1], b: [1, 1], x: [2, 0], y: [3, 0] });
    // With no preferred path the roots take columns in commit order.
    expect(cells(tree)).toEqual({ a: [0, 0], b: [1, 0], x: [2, 1], y: [3, 1] });
  });

  it("starts a column for an entry whose parent is not loaded, and draws no edge to it", () => {
    const layout = layoutTree([node("x", "missing", 7), node("y", "x", 8)]);
    expect(layout.nodes.map((placed) => [placed.id, placed.column])).toEqual([["x", 0], ["y", 0]]);
    expect(layout.edges).toHaveLength(1);
  });

  it("pathToRoot follows parents from the tip and stops at an entry it does not know", () => {
    const tree = [node("a", null, 1), node("b", "a", 2), node("c", "b", 3), node("z", "a", 4)];
    expect([...pathToRoot(tree, "c")]).toEqual(["c", "b", "a"]);
    expect([...pathToRoot(tree, null)]).toEqual([]);
    expect([...pathToRoot(tree, "unknown")]).toEqual([]);
  });
});
