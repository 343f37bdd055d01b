import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DueWork, SAFETY_NET_MS, type AlarmHost } from "../../durable-objects/session/due-work/due-work.ts";
import { FORWARD_BATCH } from "../../durable-objects/session/due-work/settlement-outbox.ts";
import { idText } from "../../durable-objects/session/storage/stored-ids.ts";
import { migrate } from "../../durable-objects/sql/migrations.ts";
import { SESSION_MIGRATIONS } from "../../durable-objects/session/storage/session-migrations.ts";
import { newId, objectStub, uniqueObjectName } from "../helpers/storage.ts";

// The session's one alarm is only moved earlier, never later and never deleted in passing: moving
// it earlier is a write the platform makes durable before the turn's commit, and every turn arms a
// safety net SAFETY_NET_MS ahead, so a turn while an earlier turn's alarm is pending writes none.

const NOW = 1_800_000_000_000;

/** The object's real alarm, with every call that writes it logged. */
function loggedHost(state: DurableObjectState, calls: string[]): AlarmHost {
  return {
    sql: state.storage.sql,
    setAlarm: (at) => (calls.push(`set +${at - NOW}`), state.storage.setAlarm(at)),
    deleteAlarm: () => (calls.push("delete"), state.storage.deleteAlarm()),
    getAlarm: () => state.storage.getAlarm(),
  };
}

describe("the session's alarm", () => {
  it("is armed once for a run of turns, moved only earlier, and left to fire when nothing is due", async () => {
    await runInDurableObject(objectStub(uniqueObjectName("due_alarm")), async (_instance, state) => {
      migrate(state.storage, SESSION_MIGRATIONS);
      const calls: string[] = [];
      let now = NOW;
      const schedule = new DueWork(loggedHost(state, calls), () => now);
      // A hosted turn: scheduled, settled, then acknowledged by the tenant after the commit.
      const turn = () => {
        const id = newId();
        schedule.due("main", id, now);
        schedule.settled("main", id);
        schedule.outbox.acknowledge([id]);
      };

      turn();
      expect(calls).toEqual([`set +${SAFETY_NET_MS}`]);
      // Later turns need the alarm no earlier than it is: nothing is written.
      for (let i = 0; i < 5; i++) {
        now += 500;
        turn();
      }
      expect(calls).toEqual([`set +${SAFETY_NET_MS}`]);
      expect(await state.storage.getAlarm()).toBe(NOW + SAFETY_NET_MS);

      // Work due before the armed time moves it earlier.
      const early = newId();
      schedule.due("side", early, now + 1_000);
      expect(calls.at(-1)).toBe(`set +${now + 1_000 - NOW}`);
      schedule.settled("side", early);
      schedule.outbox.acknowledge([early]);

      // The alarm fired: the platform holds none; the body deletes the acknowledged rows no commit
      // took along and re-arms only for what is left (nothing).
      schedule.alarmDelivered();
      const before = calls.length;
      schedule.outbox.dropAcknowledged();
      schedule.rearm();
      expect(calls.length).toBe(before);
      // The next turn arms again, from its admission on (work due now has no row to arm it from).
      schedule.due("main", newId(), now);
      expect(calls.at(-1)).toBe(`set +${now - NOW + SAFETY_NET_MS}`);
      turn();

      // Deleting the session deletes the alarm, and the next due arms a fresh one.
      await schedule.disarm();
      expect(await state.storage.getAlarm()).toBeNull();
      turn();
      expect(calls.slice(-2)).toEqual(["delete", `set +${now - NOW + SAFETY_NET_MS}`]);
    });
  });

  it("after a restart, keeps an alarm that fires early enough and moves one that would fire too late", async () => {
    await runInDurableObject(objectStub(uniqueObjectName("due_alarm_restart")), async (_instance, state) => {
      migrate(state.storage, SESSION_MIGRATIONS);
      const calls: string[] = [];
      const id = newId();
      new DueWork(loggedHost(state, calls), () => NOW).due("main", id, NOW + 60_000);
      expect(calls).toEqual(["set +60000"]);

      // A fresh instance (a restarted object) finds the alarm at the due time: kept, and known.
      const restarted = new DueWork(loggedHost(state, calls), () => NOW);
      await restarted.ensureArmed();
      restarted.due("main", id, NOW + 90_000);
      expect(calls).toEqual(["set +60000"]);

      // An alarm later than the earliest due row (set by hand here) is moved to it.
      await state.storage.setAlarm(NOW + 120_000);
      const again = new DueWork(loggedHost(state, calls), () => NOW);
      await again.ensureArmed();
      expect(calls).toEqual(["set +60000", "set +90000"]);
      expect(await state.storage.getAlarm()).toBe(NOW + 90_000);
    });
  });

  it("deletes acknowledged outbox rows with the next commit's schedule change, never forwards them again, and bounds them", async () => {
    await runInDurableObject(objectStub(uniqueObjectName("due_acked")), async (_instance, state) => {
      migrate(state.storage, SESSION_MIGRATIONS);
      const stored = () => state.storage.sql.exec<{ id: string }>(`SELECT ${idText("operation_id")} AS id FROM settlement_outbox`).toArray().map((row) => row.id);
      const schedule = new DueWork(loggedHost(state, []), () => NOW);
      const [first, second, third] = [newId(), newId(), newId()];
      schedule.settled("main", first);
      schedule.settled("main", second);
      schedule.outbox.acknowledge([first]);

      // Acknowledged: still stored, but not pending any more.
      expect(stored().sort()).toEqual([first, second].sort());
      expect(schedule.outbox.pending(10).map((row) => row.operation_id)).toEqual([second]);
      expect(schedule.outbox.pending(1).map((row) => row.operation_id)).toEqual([second]);

      // The next schedule change (here: a turn's accept) deletes it in the same batch.
      schedule.due("main", third, NOW);
      expect(stored()).toEqual([second]);

      // Acknowledgments never pile up: a batch's worth is deleted at once.
      const many = Array.from({ length: FORWARD_BATCH }, () => newId());
      for (const id of many) schedule.settled("main", id);
      schedule.outbox.acknowledge(many.slice(0, -1));
      expect(stored()).toHaveLength(FORWARD_BATCH + 1);
      schedule.outbox.acknowledge(many.slice(-1));
      expect(stored()).toEqual([second]);

      // An acknowledged row wants no alarm of its own (the alarm body would find nothing to send).
      expect(schedule.outbox.earliest()).toBe(NOW + 5_000);
      schedule.outbox.acknowledge([second]);
      expect(stored()).toEqual([second]);
      expect(schedule.outbox.earliest()).toBeUndefined();
    });
  });
});
