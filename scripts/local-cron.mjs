// `wrangler dev` never fires a Worker's cron triggers by itself; it only offers an endpoint to fire
// one by hand. The service's one trigger (wrangler.toml `crons = ["* * * * *"]`) resumes suspended
// deferred runs, so `npm start` fires it at the start of every minute, as the platform would, and a
// local server behaves like a deployment. Failed calls (the server starting or stopping) are skipped.

/** The schedule in wrangler.toml: every minute (a test checks that the two agree). */
export const MINUTE_CRON = "* * * * *";

/** Milliseconds from `now` to the start of the next minute (never 0: a tick on the boundary waits a minute). */
export function untilNextMinute(now) {
  return 60_000 - (now % 60_000);
}

/** The URL that fires `cron` on a local `wrangler dev` at `base`. */
export function scheduledUrl(base, cron = MINUTE_CRON) {
  return `${base}/cdn-cgi/local/scheduled?cron=${encodeURIComponent(cron)}`;
}

/** Fires the minute cron at `base` at the start of every minute; the timer does not keep the process alive. */
export function startLocalCron(base) {
  const tick = () => {
    fetch(scheduledUrl(base)).then((response) => response.body?.cancel(), () => undefined);
    schedule();
  };
  const schedule = () => setTimeout(tick, untilNextMinute(Date.now())).unref();
  schedule();
}
