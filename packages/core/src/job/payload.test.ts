import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from './define-job.js';
import { PayloadTooLargeError, PayloadValidationError } from '../errors.js';
import { assertPayloadSize, validatePayload } from './payload.js';
import { idempotencyKeyOf, nominalTimeOf } from './run-identity.js';

const email = defineJob({
  name: 'email.send',
  queue: 'email',
  schema: z.object({ to: z.email(), subject: z.string().min(1) }),
  handler: async () => undefined,
});

describe('validatePayload', () => {
  it('returns parsed data', () => {
    expect(validatePayload(email, { to: 'a@b.co', subject: 'hi' })).toEqual({ to: 'a@b.co', subject: 'hi' });
  });

  it('names every bad field', () => {
    try {
      validatePayload(email, { to: 'not-an-email' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(PayloadValidationError);
      const e = err as PayloadValidationError;
      expect(e.issues.map((i) => i.path)).toEqual(['to', 'subject']);
      expect(e.message).toMatch(/^invalid payload for job "email.send": to: .*; subject: /);
    }
  });

  it('refuses payloads over the size limit with a hint', () => {
    expect(() => assertPayloadSize('email.send', { body: 'x'.repeat(600 * 1024) })).toThrow(PayloadTooLargeError);
    expect(() => assertPayloadSize('email.send', { body: 'x'.repeat(100) })).not.toThrow();
  });
});

describe('run identity', () => {
  it('keys a scheduled occurrence by schedule id and nominal time', () => {
    const delivery = { id: 'repeat:billing.charge-monthly:1798761600000', name: 'billing.charge-monthly', data: {}, repeatJobKey: 'billing.charge-monthly', prevMillis: 1798761600000 };
    expect(nominalTimeOf(delivery)?.toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(idempotencyKeyOf(email, delivery, {})).toBe('billing.charge-monthly@2027-01-01T00:00:00.000Z');
  });

  it('uses the job-defined key, else the job id', () => {
    const keyed = defineJob({ ...email, idempotencyKey: (d: { to: string }) => d.to });
    const delivery = { id: '42', name: 'email.send', data: {} };
    expect(idempotencyKeyOf(keyed, delivery, { to: 'a@b.co' })).toBe('email.send@a@b.co');
    expect(idempotencyKeyOf(email, delivery, {})).toBe('email.send#42');
  });
});
