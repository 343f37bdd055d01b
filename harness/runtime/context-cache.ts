import type { Entry } from "../../schema/entries.ts";

/** Estimated bytes one lane may keep of its context before it falls back to reading (per lane). */
export const CONTEXT_CACHE_MAX_BYTES = 4 * 1024 * 1024;

/**
 * A warm lane's compaction-bounded context path (reference §1.6, QUALITY P11), kept in memory and
 * keyed by the tip it ends at. Entries are write-once and the object is single-threaded, so the
 * path read at tip T stays exact while it is extended with exactly what the lane places after T:
 * a lane-owned commit whose entries chain from the cached tip extends it (a compaction entry starts
 * a new path); anything else — a navigation, a tip the cache did not see move — misses by key and
 * reads the bounded path again. A cold object reads only the bounded context (P5/P6 hold).
 *
 * Cached entries are shared: they are frozen, so that a consumer that mutates what it was handed
 * fails loudly instead of corrupting every later request. Memory is bounded by
 * CONTEXT_CACHE_MAX_BYTES; past it the lane reads from storage as before.
 */
export class ContextCache {
  private cached: { tipId: string; path: readonly Entry[]; bytes: number } | undefined;

  constructor(private readonly maxBytes = CONTEXT_CACHE_MAX_BYTES) {}

  /** The bounded path ending at `tipId`, oldest first: cached, else `load()` (and cached if small). */
  read(tipId: string, load: () => Entry[]): readonly Entry[] {
    if (this.cached?.tipId === tipId) return this.cached.path;
    const path = load().map(frozen);
    const bytes = path.reduce((sum, entry) => sum + sizeOf(entry), 0);
    this.cached = bytes <= this.maxBytes ? { tipId, path, bytes } : undefined;
    return path;
  }

  /** Entries a lane commit placed, in placement order: extends the cached path when they chain from its tip. */
  placed(entries: readonly Entry[]): void {
    for (const entry of entries) {
      const cached = this.cached;
      if (!cached) return;
      if (entry.parentId !== cached.tipId) {
        // Placed somewhere the cache does not end: it no longer describes the lane's path.
        this.cached = undefined;
        return;
      }
      const size = sizeOf(entry);
      // A copy: a placed entry may share objects with what its caller handed the engine.
      const kept = frozen(structuredClone(entry));
      const path = entry.type === "compaction" ? [kept] : [...cached.path, kept];
      const bytes = entry.type === "compaction" ? size : cached.bytes + size;
      this.cached = bytes <= this.maxBytes ? { tipId: entry.id, path, bytes } : undefined;
    }
  }

  /**
   * The entries after `fromTipId` up to `tipId`, oldest first, when the cached path ends at
   * `tipId` and holds `fromTipId` (null: the path starts at the root); else undefined, and the
   * caller reads storage. Never loads: a settled run's answer is what it just placed.
   */
  since(fromTipId: string | null, tipId: string): readonly Entry[] | undefined {
    const cached = this.cached;
    if (cached?.tipId !== tipId) return undefined;
    if (fromTipId === null) return cached.path[0]?.parentId === null ? cached.path : undefined;
    for (let index = cached.path.length - 1; index >= 0; index--) {
      if (cached.path[index]?.id === fromTipId) return cached.path.slice(index + 1);
    }
    return undefined;
  }

  /** Forgets everything (a navigation, a restore, a fault). */
  clear(): void {
    this.cached = undefined;
  }
}

function sizeOf(entry: Entry): number {
  return JSON.stringify(entry).length;
}

function frozen<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  for (const child of Object.values(value)) frozen(child);
  return Object.freeze(value);
}
