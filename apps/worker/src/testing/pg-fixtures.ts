/**
 * Test-only catalog (loaded by real worker processes through JOBS_MODULE) for the PostgreSQL tests. The
 * jobs reach the test's private PostgreSQL through FX_DATABASE_URL. Not part of the production catalog.
 */
import { createCatalog, createLogger, defineJob } from '@tickwork/core';
import { createPgPool, pgStep, type Pool } from '@tickwork/exactly-once';
import { z } from 'zod';

export const PG_FX_KEYS = {
  /** Redis list: one entry per time `pgfx.note` ran, `<note>|<job id>`. */
  notes: 'pgfx:notes',
};

/** The tables the fixture jobs write; the tests create them (next to tickwork's, from the migration). */
export const PG_FX_SCHEMA = `CREATE TABLE IF NOT EXISTS fx_charges (
  id bigserial PRIMARY KEY, run text NOT NULL, customer int NOT NULL, pid int NOT NULL
);
CREATE TABLE IF NOT EXISTS fx_balances (run text NOT NULL, customer int NOT NULL, charged int NOT NULL DEFAULT 0,
  PRIMARY KEY (run, customer));`;

let pool: Pool | undefined;
const db = (): Pool => {
  const url = process.env.FX_DATABASE_URL;
  if (!url) throw new Error('FX_DATABASE_URL is not set');
  return (pool ??= createPgPool(url, createLogger('pg-fixtures', 'warn'), { max: 20 }));
};

/**
 * The billing run with the charge inside a PostgreSQL step: per customer, an INSERT and an UPDATE
 * in the step's transaction, then a pause of 0..maxPauseMs *after* the effect and before the commit (the
 * window in which a crash used to repeat a charge, made wide on purpose).
 */
export const pgBill = defineJob({
  name: 'pgfx.bill',
  queue: 'pgbill',
  schema: z.object({ run: z.string(), customers: z.number().int().min(1), maxPauseMs: z.number().int().min(0) }),
  retry: { attempts: 100, backoff: { type: 'fixed', delayMs: 100 } },
  async handler(ctx) {
    let total = 0;
    for (let customer = 0; customer < ctx.data.customers; customer++) {
      total += await pgStep(ctx, db(), `charge:${customer}`, async (client) => {
        await client.query('INSERT INTO fx_charges (run, customer, pid) VALUES ($1, $2, $3)', [ctx.data.run, customer, process.pid]);
        await client.query(
          `INSERT INTO fx_balances (run, customer, charged) VALUES ($1, $2, 1)
           ON CONFLICT (run, customer) DO UPDATE SET charged = fx_balances.charged + 1`,
          [ctx.data.run, customer],
        );
        await new Promise((r) => setTimeout(r, Math.floor(Math.random() * (ctx.data.maxPauseMs + 1))));
        return 1;
      });
    }
    return { charged: total };
  },
});

/** A job whose every run is visible: the outbox tests count how often each relayed job ran. */
export const pgNote = defineJob({
  name: 'pgfx.note',
  queue: 'pgfx',
  schema: z.object({ note: z.string() }),
  async handler(ctx) {
    await ctx.redis.rpush(PG_FX_KEYS.notes, `${ctx.data.note}|${ctx.jobId}`);
    return { note: ctx.data.note };
  },
});

export const catalog = createCatalog([pgBill, pgNote]);
