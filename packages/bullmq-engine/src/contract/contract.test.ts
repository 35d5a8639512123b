/**
 * The engine's contract with the installed BullMQ and ioredis (contract.ts): every internal the fast paths
 * rely on, each checked by name. A BullMQ release that changes one fails its own test here, named; the
 * worker meanwhile runs on BullMQ's public paths (engine.ts). docs/upgrading-bullmq.md says what to do.
 */
import { metricsRegistry } from '@tickwork/core';
import { Worker } from 'bullmq';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../engine.js';
import { TickworkWorker } from '../worker/tickwork-worker.js';
import { checkContract, scriptEntry, type ContractEntry } from './check.js';
import { CONTRACT } from './contract.js';
import { MIRRORED_SCRIPTS } from './scripts.js';

const quiet = pino({ level: 'silent' });

async function gauge(name: string): Promise<number | undefined> {
  return (await metricsRegistry.getSingleMetric(name)?.get())?.values[0]?.value;
}

describe('the contract with the installed BullMQ', () => {
  for (const entry of CONTRACT) {
    it(`holds: ${entry.name}`, () => {
      const [mismatch] = checkContract([entry]);
      expect(mismatch, `BullMQ internal "${entry.name}" (${entry.why}) no longer matches: ${mismatch?.detail}`).toBeUndefined();
    });
  }

  it('names every script the fast paths mirror or wrap', () => {
    const names = CONTRACT.map((e) => e.name);
    for (const s of MIRRORED_SCRIPTS) expect(names).toContain(`bullmq commands/${s.file}`);
    expect(names).toContain('Worker.prototype.processJob');
    expect(names).toContain('bullmq version');
  });

  it('fails naming the script when one digest changes', () => {
    const first = MIRRORED_SCRIPTS[0];
    if (!first) throw new Error('no mirrored script in the contract');
    const altered: ContractEntry[] = CONTRACT.map((e) => (e.name === `bullmq commands/${first.file}` ? scriptEntry(first.file, '000000000000', first.why) : e));
    const found = checkContract(altered);
    expect(found).toHaveLength(1);
    expect(found[0]?.name).toBe(`bullmq commands/${first.file}`);
    expect(found[0]?.detail).toMatch(/its text changed \(digest [0-9a-f]{12}, the contract's 000000000000\)/);
  });
});

describe('the engine', () => {
  it('takes the fast path when the contract holds: tickwork\'s Worker, results folded, stalls counted', async () => {
    const engine = createEngine({ log: quiet });
    expect(engine.mode).toBe('fast');
    expect(engine.mismatches).toEqual([]);
    expect(engine.ackConnectionOf).toBeTypeOf('function');
    expect(engine.stalls).toBeDefined();
    const worker = engine.createWorker('contract-fast', async () => undefined, { connection: { host: '127.0.0.1', port: 1, lazyConnect: true }, autorun: false });
    expect(worker).toBeInstanceOf(TickworkWorker);
    expect(await gauge('tickwork_bullmq_fast_path')).toBe(1);
    await worker.close(true);
  });

  it("runs on BullMQ's public paths when an entry does not hold, and says which once", async () => {
    const lines: { msg: string; mismatches?: string[] }[] = [];
    const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as { msg: string; mismatches?: string[] }) });
    const broken: ContractEntry = { name: 'bullmq commands/moveToFinished-14.lua', why: 'test', check: () => 'its text changed' };
    const engine = createEngine({ log, contract: [...CONTRACT, broken] });
    expect(engine.mode).toBe('public');
    expect(engine.mismatches).toEqual([{ name: broken.name, detail: 'its text changed' }]);
    expect(engine.ackConnectionOf).toBeUndefined();
    expect(engine.stalls).toBeUndefined();
    const worker = engine.createWorker('contract-public', async () => undefined, { connection: { host: '127.0.0.1', port: 1, lazyConnect: true }, autorun: false });
    expect(worker).toBeInstanceOf(Worker);
    expect(worker).not.toBeInstanceOf(TickworkWorker);
    const warned = lines.filter((l) => l.msg.includes("running on BullMQ's public paths only"));
    expect(warned).toHaveLength(1);
    expect(warned[0]?.mismatches).toEqual([`${broken.name}: its text changed`]);
    expect(await gauge('tickwork_bullmq_fast_path')).toBe(0);
    expect(await gauge('tickwork_bullmq_contract_mismatches')).toBeGreaterThanOrEqual(1);
    await worker.close(true);
  });

  it('is forced onto the public paths by WORKER_BULLMQ_FAST_PATH=off', () => {
    const engine = createEngine({ log: quiet, fastPath: 'off' });
    expect(engine.mode).toBe('public');
    expect(engine.mismatches).toEqual([]);
  });
});
