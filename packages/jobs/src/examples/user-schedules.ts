/**
 * An example producer: each user gets her own runtime schedule, "09:00 every day in the user's timezone",
 * created when she signs up and changed when she moves. Call it from wherever the application learns
 * about users (a sign-up handler, a settings page); upserting the same definition again changes nothing,
 * so calling it on every login or on every deploy is safe.
 */
import type { Schedules, UpsertResult } from 'tickwork';
import { digestUser } from '../jobs/digest-user.js';

export interface DigestUser {
  id: string;
  /** IANA timezone, e.g. Europe/Lisbon. */
  tz: string;
}

/** The schedule id of a user's digest: the application's own, one per user. */
export function userDigestScheduleId(userId: string): string {
  return `${digestUser.name}:user-${userId}`;
}

/** Creates (or moves to her current timezone) the user's 09:00 digest schedule. */
export function scheduleUserDigest(schedules: Schedules, user: DigestUser, pattern = '0 9 * * *'): Promise<UpsertResult> {
  return schedules.upsert(userDigestScheduleId(user.id), { job: digestUser, pattern, tz: user.tz, data: { userId: user.id } });
}

/** When the user deletes her account: her schedule goes, and its pending occurrence does not run. */
export function unscheduleUserDigest(schedules: Schedules, userId: string): Promise<boolean> {
  return schedules.remove(userDigestScheduleId(userId));
}
