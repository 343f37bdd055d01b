// The layout of a session's entry tree as the Inspector draws it, like a version-control graph:
// one row per entry in commit order (seq, oldest at the top), one column per branch line. A
// parent's column continues into one child (its "heir"): the child on the path to the preferred tip
// (the watched lane's) when there is one, else its oldest child; every other child opens a new
// column. Column 0 is kept for the preferred path's root, so that path is the first column also
// when it starts at a root newer than another one (a lane created at the root). Pure, so it is
// tested on its own (test/inspector/tree-layout.test.ts).

export interface TreeNodeInput {
  id: string;
  parentId: string | null;
  seq: number;
}

export interface PlacedNode {
  id: string;
  parentId: string | null;
  row: number;
  column: number;
}

export interface TreeLayout {
  nodes: PlacedNode[];
  /** Parent → child, for each child whose parent is in the layout. */
  edges: { from: PlacedNode; to: PlacedNode }[];
  columns: number;
}

/** The ids from `tipId` back to the root, following parents among `nodes`. */
export function pathToRoot(nodes: readonly TreeNodeInput[], tipId: string | null): Set<string> {
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const path = new Set<string>();
  for (let id = tipId; id !== null && !path.has(id); ) {
    const node = byId.get(id);
    if (!node) break;
    path.add(id);
    id = node.parentId;
  }
  return path;
}

export function layoutTree(input: readonly TreeNodeInput[], preferredPath: ReadonlySet<string> = new Set()): TreeLayout {
  const ordered = [...input].sort((a, b) => a.seq - b.seq);
  const known = new Set(ordered.map((node) => node.id));
  const heirOf = new Map<string, string>();
  for (const node of ordered) {
    if (node.parentId === null || !known.has(node.parentId)) continue;
    const current = heirOf.get(node.parentId);
    if (current === undefined || (preferredPath.has(node.id) && !preferredPath.has(current))) heirOf.set(node.parentId, node.id);
  }
  // The preferred path's root: the entry on it without a parent in the layout (a root, or an
  // entry whose parent is not loaded). It gets column 0; other lines open columns after it.
  const pathRoot = ordered.find((node) => preferredPath.has(node.id) && (node.parentId === null || !known.has(node.parentId)));
  const placed = new Map<string, PlacedNode>();
  let columns = pathRoot === undefined ? 0 : 1;
  const nodes = ordered.map((node, row): PlacedNode => {
    const parent = node.parentId === null ? undefined : placed.get(node.parentId);
    const heir = parent !== undefined && heirOf.get(parent.id) === node.id;
    const column = heir ? parent.column : node === pathRoot ? 0 : columns++;
    const result = { id: node.id, parentId: node.parentId, row, column };
    placed.set(node.id, result);
    return result;
  });
  const edges = nodes.flatMap((to) => {
    const from = to.parentId === null ? undefined : placed.get(to.parentId);
    return from ? [{ from, to }] : [];
  });
  return { nodes, edges, columns: Math.max(columns, 1) };
}
