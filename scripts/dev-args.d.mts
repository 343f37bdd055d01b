export declare const DEV_DEFAULTS: readonly (readonly [string, string])[];
export declare function flagValue(args: readonly string[], name: string): string | undefined;
export declare function hasFlag(args: readonly string[], name: string): boolean;
export declare function wranglerDevArgs(args: readonly string[]): { args: string[]; port: string };
export declare function splitOwnFlags(args: readonly string[]): { devKey: boolean; devTenant: string; cron: boolean; rest: string[] };
export declare function listenAddress(args: readonly string[]): string;
export declare function localBase(args: readonly string[]): string;
export declare function persistDir(args: readonly string[]): string;
