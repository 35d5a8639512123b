import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { catalog } from './index.js';
import { emailSend } from './jobs/email-send.js';

const jobsDir = join(dirname(fileURLToPath(import.meta.url)), 'jobs');

describe('the job catalog', () => {
  it('has the example jobs with their schedules and explicit timezones', () => {
    const summary = Object.fromEntries(
      catalog.jobs.map((j) => [j.name, j.schedule ? { pattern: j.schedule.pattern, every: j.schedule.every, tz: j.schedule.tz } : null]),
    );
    expect(summary).toMatchObject({
      'billing.charge-monthly': { pattern: '0 0 1 * *', tz: 'UTC' },
      'reports.daily-revenue': { pattern: '0 8 * * *', tz: 'America/New_York' },
      'sessions.cleanup': { every: { minutes: 30 }, tz: 'UTC' },
      'digest.weekly': { pattern: '0 10 * * 1', tz: 'UTC' },
      'email.send': null,
    });
  });

  it('keeps one job per file, each saying what makes it idempotent', () => {
    const files = readdirSync(jobsDir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    expect(files.length).toBeGreaterThanOrEqual(catalog.jobs.length);
    for (const file of files) {
      const source = readFileSync(join(jobsDir, file), 'utf8');
      expect(source.match(/defineJob\(/g)?.length, `${file} defines exactly one job`).toBe(1);
      expect(source, `${file} has an "Idempotent because" header`).toMatch(/^\/\*\*[\s\S]*?Idempotent because:/);
    }
  });

  it('rejects a bad email.send payload, naming the fields', () => {
    const result = emailSend.schema.safeParse({ to: 'nope', subject: '' });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((i) => i.path.join('.'))).toEqual(['to', 'subject', 'body']);
  });
});
