/**
 * The demo world the example jobs act on. Their side effects are written to Redis under these keys so
 * tests and operators can see exactly what happened (how many charges, which emails).
 */
export const DEMO_KEYS = {
  /**
   * List of JSON charge records: one entry per charge made. A double charge shows up as two entries.
   * The `{billing}` / `{email}` tags put these keys on their queue's slot on Redis Cluster, where a
   * redisStep's writes must share it (README, Redis Cluster).
   */
  charges: 'tickwork:demo:{billing}:charges',
  /** List of JSON emails "sent". */
  outbox: 'tickwork:demo:{email}:outbox',
  /** Hash: report date -> JSON revenue report. */
  reports: 'tickwork:demo:reports',
  /** Sorted set: session id scored by expiry (ms). */
  sessions: 'tickwork:demo:sessions',
} as const;

export interface DemoCustomer {
  id: string;
  email: string;
  planCents: number;
}

export const DEMO_CUSTOMERS: readonly DemoCustomer[] = Array.from({ length: 20 }, (_, i) => ({
  id: `cus_${String(i + 1).padStart(3, '0')}`,
  email: `customer${i + 1}@example.com`,
  planCents: 900 + (i % 3) * 1000,
}));

export const DEMO_SUBSCRIBERS: readonly string[] = DEMO_CUSTOMERS.filter((_, i) => i % 2 === 0).map((c) => c.email);

export interface ChargeRecord {
  customerId: string;
  cycle: string;
  amountCents: number;
  idempotencyKey: string;
  chargedAt: string;
}

/** Zones of the demo digest users: a 1-hour DST (New York, Berlin), a 30-minute DST (Lord Howe), +05:30, +05:45. */
export const DEMO_ZONES = ['America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe', 'Asia/Kolkata', 'Asia/Kathmandu', 'UTC'] as const;

/** Users who get the morning digest at 09:00 in their own timezone. */
export const DEMO_DIGEST_USERS: readonly { id: string; email: string; tz: string }[] = DEMO_CUSTOMERS.slice(0, 12).map((c, i) => ({
  id: c.id,
  email: c.email,
  tz: DEMO_ZONES[i % DEMO_ZONES.length] ?? 'UTC',
}));
