import type { CreateSchedule, ListedSchedule, PatchSchedule, Schedule, ScheduleRun, ScheduleSkipReason } from "../schema/schedules.ts";
import { path, type CallOptions, type HttpClient } from "./http.ts";
import { paginate } from "./paging.ts";
import type { Page, PageQuery } from "./types.ts";

export type { CreateSchedule, ListedSchedule, PatchSchedule, Schedule, ScheduleRun, ScheduleSkipReason };

/**
 * Schedules of a lane (`docs/schedules.md`): a prompt that starts on its own on a 5-field cron
 * expression in a time zone, once at a time, or every n seconds; each due time starts one run or
 * is recorded skipped with its reason.
 */
export class SchedulesApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /**
   * `POST …/lanes/{lane}/schedules` `{ id?, cron | at | everySeconds, timezone?, prompt, ifBusy? }` →
   * the schedule (a repeat with the same `id` and body answers the same one; another body under
   * that id is 409 ScheduleExists; at most 20 per lane: 422 LimitExceeded).
   */
  create(sessionId: string, lane: string, body: CreateSchedule, options: CallOptions = {}): Promise<Schedule> {
    return this.http.json({ ...options, method: "POST", path: schedulesPath(sessionId, lane), body });
  }

  /** `GET …/lanes/{lane}/schedules` → the lane's schedules by id (at most 20). */
  async list(sessionId: string, lane: string, options: CallOptions = {}): Promise<Schedule[]> {
    const body = await this.http.json<{ items: Schedule[] }>({ ...options, method: "GET", path: schedulesPath(sessionId, lane) });
    return body.items;
  }

  get(sessionId: string, lane: string, id: string, options: CallOptions = {}): Promise<Schedule> {
    return this.http.json({ ...options, method: "GET", path: `${schedulesPath(sessionId, lane)}${path(id)}` });
  }

  /** `PATCH …/schedules/{id}`: any of `cron`, `at`, `everySeconds`, `timezone`, `prompt`, `ifBusy`, `paused`. */
  patch(sessionId: string, lane: string, id: string, body: PatchSchedule, options: CallOptions = {}): Promise<Schedule> {
    return this.http.json({ ...options, method: "PATCH", path: `${schedulesPath(sessionId, lane)}${path(id)}`, body });
  }

  pause(sessionId: string, lane: string, id: string, options: CallOptions = {}): Promise<Schedule> {
    return this.patch(sessionId, lane, id, { paused: true }, options);
  }

  /** Resumed: due times missed while paused start one run at once. */
  resume(sessionId: string, lane: string, id: string, options: CallOptions = {}): Promise<Schedule> {
    return this.patch(sessionId, lane, id, { paused: false }, options);
  }

  /** `DELETE …/schedules/{id}` → 204 (404 ScheduleNotFound for an unknown id). */
  async delete(sessionId: string, lane: string, id: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: `${schedulesPath(sessionId, lane)}${path(id)}` });
  }

  /** `GET …/schedules/{id}/runs?limit&cursor` → one page of its runs, newest due time first. */
  runs(sessionId: string, lane: string, id: string, query: PageQuery = {}, options: CallOptions = {}): Promise<Page<ScheduleRun>> {
    return this.http.json({ ...options, method: "GET", path: `${schedulesPath(sessionId, lane)}${path(id)}/runs`, query: { limit: query.limit, cursor: query.cursor } });
  }

  allRuns(sessionId: string, lane: string, id: string, query: Omit<PageQuery, "cursor"> = {}, options: CallOptions = {}): AsyncGenerator<ScheduleRun, void, undefined> {
    return paginate((cursor) => this.runs(sessionId, lane, id, { ...query, ...(cursor !== undefined && { cursor }) }, options));
  }

  /** `GET /v1/schedules?limit&cursor` → one page of all the tenant's schedules, by session and id. */
  listAll(query: PageQuery = {}, options: CallOptions = {}): Promise<Page<ListedSchedule>> {
    return this.http.json({ ...options, method: "GET", path: "/v1/schedules", query: { limit: query.limit, cursor: query.cursor } });
  }

  all(query: Omit<PageQuery, "cursor"> = {}, options: CallOptions = {}): AsyncGenerator<ListedSchedule, void, undefined> {
    return paginate((cursor) => this.listAll({ ...query, ...(cursor !== undefined && { cursor }) }, options));
  }
}

function schedulesPath(sessionId: string, lane: string): string {
  return `/v1/sessions${path(sessionId)}/lanes${path(lane)}/schedules`;
}
