export declare const LOCK_FILE: string;
export interface StateLockHolder {
  pid: number | undefined;
  url?: string;
  since?: string;
  /** The server (wrangler's process group leader) the holder started. */
  server?: { pid: number; procStart?: string };
}
export type StateLock = { taken: true; path: string; release: () => void } | { taken: false; path: string; holder: StateLockHolder };
export declare function takeStateLock(dir: string, info?: Record<string, unknown>): StateLock;
export declare function recordServer(path: string, pid: number): void;
export declare function releaseStateLock(path: string): void;
export declare function readLock(path: string): StateLockHolder | undefined;
