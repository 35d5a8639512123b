import { DateTime } from 'luxon';

export interface TimezonedUser {
  id: string;
  /** IANA timezone of the user. */
  tz: string;
}

export interface LocalTimeMatch<U extends TimezonedUser> {
  user: U;
  /** The user's local calendar date at `at`, `YYYY-MM-DD`. */
  localDate: string;
}

/**
 * The users for whom it is `localTime` (HH:mm) now, for a fan-out schedule that runs every `slotMinutes`
 * (default 15, which covers every real offset including +05:30, +05:45 and +12:45). A user matches when
 * their local time at `at` is in [localTime, localTime + slot): exactly one slot per local day, DST or not.
 */
export function usersAtLocalTime<U extends TimezonedUser>(
  at: Date,
  localTime: string,
  users: Iterable<U>,
  slotMinutes = 15,
): LocalTimeMatch<U>[] {
  const match = /^(\d{2}):(\d{2})$/.exec(localTime);
  const hour = Number(match?.[1]);
  const minute = Number(match?.[2]);
  if (!match || hour > 23 || minute > 59) throw new Error(`localTime ${JSON.stringify(localTime)} must be HH:mm, e.g. "09:00"`);
  const byZone = new Map<string, { matches: boolean; localDate: string }>();
  const out: LocalTimeMatch<U>[] = [];
  for (const user of users) {
    let zone = byZone.get(user.tz);
    if (!zone) {
      const local = DateTime.fromJSDate(at, { zone: user.tz });
      const minutesNow = local.hour * 60 + local.minute;
      const target = hour * 60 + minute;
      zone = { matches: local.isValid && minutesNow >= target && minutesNow < target + slotMinutes, localDate: local.toISODate() ?? '' };
      byZone.set(user.tz, zone);
    }
    if (zone.matches) out.push({ user, localDate: zone.localDate });
  }
  return out;
}

/**
 * `<job>@<user>@<local date>`: the idempotency key (and job id) of one user's fan-out job for one local
 * day, so a retry, a catch-up or a second replica never sends twice. ':' is replaced (BullMQ ids forbid it).
 */
export function localFanOutKey(jobName: string, userId: string, localDate: string): string {
  return `${jobName}@${userId}@${localDate}`.replaceAll(':', '_');
}
