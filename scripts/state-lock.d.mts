export declare const LOCK_FILE: string;
export interface StateLockHolder {
  pid: number | undefined;
  url?: string;
  since?: string;
}
export type StateLock = { taken: true; path: string; release: () => void } | { taken: false; path: string; holder: StateLockHolder };
export declare function takeStateLock(dir: string, info?: Record<string, unknown>): StateLock;
export declare function releaseStateLock(path: string): void;
export declare function readLock(path: string): StateLockHolder | undefined;
