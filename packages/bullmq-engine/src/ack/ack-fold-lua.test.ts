/**
 * The acknowledgements' script (ack-fold-lua.ts, ackFoldLua) is built around the installed BullMQ's own
 * moveToFinished, and its lean path (ack-lean-lua.ts) does what parts of that script do, with BullMQ's own
 * include functions. What runs is tested against real Redis and BullMQ (compact-acks.test.ts here,
 * exactly-once/ack-fold.test.ts in apps/worker); this pins what a BullMQ upgrade could break quietly:
 * foldAcks installs nothing (and the worker only logs a warning) when moveToFinished no longer takes the KEYS
 * it expects, and every BullMQ Lua file the fast paths include, mirror or wrap is the text they were written
 * against (BullMQ 6.7.0; contract/scripts.ts, MIRRORED_SCRIPTS). A failure here names the file: read its new
 * text, bring the code its entry names in line with it, then record the new digest.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { monitorRedis, startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ackFoldLua, foldReply, foldWords } from './ack-fold-lua.js';
import { leanFinishLua } from './ack-lean-lua.js';
import { MOVE_TO_FINISHED_KEYS } from './ack-constants.js';
import { AckOptions, SharedAckOptions } from './ack-options.js';
import { MIRRORED_SCRIPTS } from '../contract/scripts.js';
import { bullmqFileText } from '../lua/bullmq-includes.js';

const require = createRequire(import.meta.url);
const { moveToFinished } = require(`bullmq/dist/cjs/scripts/moveToFinished-${MOVE_TO_FINISHED_KEYS}.js`) as { moveToFinished: { content: string; keys: number } };

const digest = (s: string) => createHash('sha1').update(s).digest('hex').slice(0, 12);

/** Fails, naming the file, at the first entry whose file's text is not the one its digest was recorded from. */
function expectUnchanged(scripts: typeof MIRRORED_SCRIPTS): void {
  for (const { file, digest: recorded, why } of scripts) {
    const found = digest(bullmqFileText(file));
    expect(found, `BullMQ's ${file} changed (digest ${found}, recorded ${recorded}): read its new text and bring in line what relies on it (${why}), then record the new digest in contract/scripts.ts`).toBe(recorded);
  }
}

/** The names a Lua text defines at its top level (`local function f(`, `local a, b =`): lines that start there. */
function topLevelNames(lua: string): string[] {
  return [...lua.matchAll(/^local (?:function (\w+)|([\w, ]+?)\s*=)/gm)].flatMap((m) => (m[1] ? [m[1]] : (m[2] ?? '').split(',').map((n) => n.trim())));
}

describe('ackFoldLua', () => {
  it("takes the installed BullMQ's moveToFinished, with the KEYS count it expects", () => {
    expect(moveToFinished.keys).toBe(MOVE_TO_FINISHED_KEYS);
    const lua = ackFoldLua(moveToFinished.content);
    expect(lua).toContain(`local function moveToFinished(KEYS, ARGV)\n${moveToFinished.content}\nend`);
  });

  it('is run beside the text of every BullMQ file its fast paths include, mirror or wrap, unchanged', () => {
    expect(MIRRORED_SCRIPTS.map((s) => s.file)).toContain(`moveToFinished-${MOVE_TO_FINISHED_KEYS}.lua`);
    expect(new Set(MIRRORED_SCRIPTS.map((s) => s.file)).size).toBe(MIRRORED_SCRIPTS.length);
    expectUnchanged(MIRRORED_SCRIPTS);
  });

  it('fails naming the file whose text changed', () => {
    const altered = MIRRORED_SCRIPTS.map((s) => (s.file === 'includes/removeLock.lua' ? { ...s, digest: '000000000000' } : s));
    expect(() => expectUnchanged(altered)).toThrow(/BullMQ's includes\/removeLock\.lua changed \(digest a87722a8f00f, recorded 000000000000\)/);
  });

  it('pins every BullMQ include the lean path inlines', () => {
    const lean = leanFinishLua();
    expect(lean).not.toMatch(/@include/);
    const pinned = new Set(MIRRORED_SCRIPTS.map((s) => s.file));
    const included = [...lean.matchAll(/^local function (\w+)\(/gm)].map((m) => `includes/${m[1]}.lua`).filter((file) => {
      try {
        return bullmqFileText(file).length > 0;
      } catch {
        return false; // the lean path's own function
      }
    });
    expect(included).toEqual(expect.arrayContaining(['includes/removeLock.lua', 'includes/prepareJobForProcessing.lua', 'includes/promoteDelayedJobs.lua', 'includes/addBaseMarkerIfNeeded.lua']));
    for (const file of included) expect(pinned.has(file), `${file} is inlined by the lean path but not in MIRRORED_SCRIPTS`).toBe(true);
  });

  it("defines each of its top-level names once, BullMQ's include functions and the rcall they call among them", () => {
    const lua = ackFoldLua(moveToFinished.content);
    // BullMQ's script, wrapped in a function, keeps its own locals (its rcall and include functions) to itself.
    const outside = lua.replace(`local function moveToFinished(KEYS, ARGV)\n${moveToFinished.content}\nend`, 'local function moveToFinished(KEYS, ARGV) end');
    const names = topLevelNames(outside);
    expect(names).toEqual(expect.arrayContaining(['rcall', 'removeLock', 'prepareJobForProcessing', 'leanFinish', 'leanAfter', 'moveToFinished', 'cmsgpack']));
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
    // BullMQ's include functions call the rcall (and updateJobFields the cmsgpack stand-in) defined above them.
    expect(outside.indexOf('local rcall = redis.call')).toBeLessThan(outside.indexOf('local function removeLock('));
    expect(outside.indexOf('local cmsgpack = {')).toBeLessThan(outside.indexOf('local function updateJobFields('));
  });
});

/**
 * The lean path against BullMQ's own script, in Redis: the same queue state made twice, one acknowledgement
 * sent to BullMQ's moveToFinished in one and compact through the fold in the other; the replies and every
 * key (streams by their entries' fields) must be the same. The fold's own tests (compact-acks.test.ts) drain
 * real queues; this reaches the lean path's refusals and its paths to a next job one at a time.
 */
describe("the lean path, against BullMQ's script", () => {
  let server: RedisServerHandle;
  let redis: ReturnType<RedisServerHandle['client']>;
  beforeAll(async () => {
    server = await startRedisServer();
    redis = server.client();
  });
  afterAll(async () => {
    await server.stop();
  });

  const NOW = 1_796_000_000_000;
  const fold = ackFoldLua(moveToFinished.content);
  type Scenario = {
    lock?: 'own' | 'other' | 'none';
    active?: boolean;
    wait?: string[];
    prioritized?: string[];
    delayed?: [string, number][];
    fetchNext?: '0' | '1';
    /** The acknowledgement's keepJobs (default: removed on completion) and jobs completed before it, with their finish times. */
    keep?: { count?: number; age?: number };
    completed?: [string, number][];
  };
  const scenarios: Record<string, Scenario> = {
    'fetches the next waiting job, due delayed jobs promoted': { wait: ['2', '3'], delayed: [['4', NOW - 10], ['5', NOW + 60_000]] },
    'fetches a prioritized job when none waits': { prioritized: ['6'] },
    'fetches a delayed job promoted with a priority': { delayed: [['7', NOW - 10]] },
    "replies the next delayed job's time when none waits": { delayed: [['5', NOW + 60_000]] },
    'announces the queue drained': {},
    'does not fetch when not asked': { wait: ['2'], fetchNext: '0' },
    'refuses a job locked by this delivery but not active (-3)': { active: false, wait: ['2'] },
    "refuses another's lock (-6)": { lock: 'other', wait: ['2'] },
    'refuses a missing lock (-2)': { lock: 'none', wait: ['2'] },
    'keeps the job and trims the completed set to its count': { keep: { count: 2 }, completed: [['8', NOW - 5000], ['9', NOW - 4000]], wait: ['2'] },
    'keeps the job and removes completed jobs past its age': { keep: { age: 1, count: 100 }, completed: [['8', NOW - 5000], ['9', NOW - 500]], wait: ['2'] },
    'keeps every job when asked to (no count)': { keep: { count: -1 }, completed: [['8', NOW - 5000]] },
    'refuses a kept job locked by this delivery but not active (-3)': { keep: { count: 2 }, active: false, wait: ['2'] },
  };

  async function setUp(q: string, s: Scenario): Promise<unknown[]> {
    const prefix = `tw:${q}:`;
    const job = (id: string, priority = 0) => redis.hset(prefix + id, 'name', 'j', 'data', `{"id":${id}}`, 'opts', '{}', 'timestamp', NOW - 100, 'delay', 0, 'priority', priority, 'atm', 0);
    await job('1');
    for (const id of ['2', '3', '4', '5', '6']) await job(id, id === '6' ? 2 : 0);
    await job('7', 5);
    for (const [id, at] of s.completed ?? []) {
      await job(id);
      await redis.hset(prefix + id, 'finishedOn', at, 'returnvalue', 'null');
      await redis.zadd(`${prefix}completed`, at, id);
    }
    if (s.active !== false) await redis.lpush(`${prefix}active`, '1');
    await redis.sadd(`${prefix}stalled`, '1');
    if ((s.lock ?? 'own') !== 'none') await redis.set(`${prefix}1:lock`, s.lock === 'other' ? 'w9:1' : 'w1:1', 'PX', 30_000);
    for (const id of s.wait ?? []) await redis.lpush(`${prefix}wait`, id);
    for (const id of s.prioritized ?? []) await redis.zadd(`${prefix}prioritized`, 2 * 0x100000000 + 1, id);
    for (const [id, at] of s.delayed ?? []) await redis.zadd(`${prefix}delayed`, at * 0x1000, id);
    const keys = ['wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc', 'completed', '1', 'metrics:completed', 'marker'].map((k) => prefix + k);
    const options = new AckOptions('w1:1', new SharedAckOptions({ name: 'w1', keepJobs: s.keep ?? { count: 0 }, lockDuration: 30_000, attempts: 1, maxMetricsSize: '', fpof: false, cpof: false, idof: false, rdof: false }));
    return [...keys, '1', NOW, 'returnvalue', '{"ok":true}', 'completed', s.fetchNext ?? '1', prefix, options, undefined];
  }

  /** Every key of queue `q`, by name without the queue's prefix: its value, as its type reads it (streams: fields only). */
  async function state(q: string): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {};
    for (const key of (await redis.keys(`tw:${q}:*`)).sort()) {
      const name = key.slice(`tw:${q}:`.length);
      const type = await redis.type(key);
      const ttl = (await redis.pttl(key)) > 0;
      if (type === 'string') out[name] = [await redis.get(key), ttl];
      else if (type === 'hash') out[name] = Object.entries(await redis.hgetall(key)).sort();
      else if (type === 'list') out[name] = await redis.lrange(key, 0, -1);
      else if (type === 'set') out[name] = (await redis.smembers(key)).sort();
      else if (type === 'zset') out[name] = await redis.zrange(key, '0', '-1', 'WITHSCORES');
      else if (type === 'stream') out[name] = (await redis.xrange(key, '-', '+')).map(([, fields]) => fields);
      else out[name] = type;
    }
    return out;
  }

  let n = 0;
  for (const [what, s] of Object.entries(scenarios)) {
    it(what, async () => {
      const [ours, theirs] = [`lean-${n}`, `bull-${n++}`];
      const args = await setUp(theirs, s);
      const packed = args.map((a) => (a instanceof AckOptions ? a.packed() : a));
      const bull = await redis.eval(moveToFinished.content, MOVE_TO_FINISHED_KEYS, ...(packed.slice(0, -1) as (string | number | Buffer)[]));
      const words = foldWords([{ args: await setUp(ours, s), completion: undefined }], [undefined]);
      expect(words.some((w) => typeof w === 'string' && w.startsWith('{"name":"w1","keepJobs"')), 'sent compact').toBe(true);
      const ran: string[] = [];
      let pinged = false;
      const monitor = await monitorRedis(server, ({ args: [command], source }) => {
        if (source === 'lua') ran.push((command ?? '').toUpperCase());
        else if (/^ping$/i.test(command ?? '')) pinged = true;
      });
      const replies = (await redis.eval(fold, ...(words as [number, ...string[]]))) as [unknown, unknown][];
      await redis.ping(); // MONITOR shows commands in the order they ran: once it shows this, it has shown the script's
      await waitFor(async () => pinged, { timeoutMs: 5000, what: 'MONITOR to show the PING after the script' });
      monitor.stop();
      // The lean path asks whether the job has children with one EXISTS; BullMQ's script with SCARD, where the lean path refused.
      expect(ran, 'the lean path ran').toContain('EXISTS');
      expect(ran.includes('SCARD'), "BullMQ's script ran").toBe(s.lock === 'other' || s.lock === 'none');
      expect(foldReply(replies[0]?.[1])).toEqual(bull);
      expect(await state(ours)).toEqual(await state(theirs));
    });
  }
});
