export declare const LOCAL_SETTINGS: Readonly<Record<string, string>>;
export declare function parseDevVars(text: string): Record<string, string>;
export declare function devVar(text: string, name: string): string | undefined;
export declare function ensureDevVars(path: string): string[];
export declare function devVarsProblems(text: string): string[];
