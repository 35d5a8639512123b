/**
 * The demo world the example jobs act on. Their side effects are written to Redis under these keys so
 * tests and operators can see exactly what happened (how many charges, which emails).
 */
export const DEMO_KEYS = {
  /** List of JSON charge records: one entry per charge made. A double charge shows up as two entries. */
  charges: 'tickwork:demo:charges',
  /** List of JSON emails "sent". */
  outbox: 'tickwork:demo:outbox',
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
