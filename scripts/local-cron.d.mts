export declare const MINUTE_CRON: string;
export declare function untilNextMinute(now: number): number;
export declare function scheduledUrl(base: string, cron?: string): string;
export declare function startLocalCron(base: string): void;
