/**
 * bullmqLua builds Lua from the installed BullMQ's include files as BullMQ's ScriptLoader does: each file
 * once, its own includes first; and what it builds runs in Redis through tickwork's one Lua runner.
 */
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { defineScript, runScript } from '@tickwork/core';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bullmqCommandsDir, bullmqFileText, bullmqLua } from './bullmq-includes.js';

const count = (text: string, part: string) => text.split(part).length - 1;
/** BullMQ's ScriptLoader drops blank lines from what it builds (its removeEmptyLines). */
const withoutEmptyLines = (text: string) => text.replace(/^\s*[\r\n]/gm, '');

describe('bullmqLua', () => {
  it('finds the installed BullMQ and reads its files as shipped', () => {
    expect(bullmqCommandsDir()).toBe(path.join(path.dirname(createRequire(import.meta.url).resolve('bullmq')), 'commands'));
    expect(bullmqFileText('includes/prepareJobForProcessing.lua')).toContain('--- @include "addBaseMarkerIfNeeded"');
    expect(bullmqFileText('moveToFinished-14.lua')).toContain('--- @include "includes/fetchNextJob"');
  });

  it('inlines an include and, before it, the includes it asks for, each once', () => {
    const lua = bullmqLua('local rcall = redis.call\n--- @include "includes/prepareJobForProcessing"\nreturn 1\n');
    expect(lua).not.toContain('@include');
    expect(count(lua, 'local function addBaseMarkerIfNeeded(')).toBe(1);
    expect(count(lua, 'local function prepareJobForProcessing(')).toBe(1);
    expect(lua.indexOf('local function addBaseMarkerIfNeeded(')).toBeLessThan(lua.indexOf('local function prepareJobForProcessing('));
    expect(lua.indexOf('local rcall = redis.call')).toBeLessThan(lua.indexOf('local function addBaseMarkerIfNeeded('));
    expect(lua.trimEnd().endsWith('return 1')).toBe(true);
  });

  it('inlines a file several includes share once, where it is first asked for', () => {
    const lua = bullmqLua(['--- @include "includes/promoteDelayedJobs"', "--- @include 'includes/addJobWithPriority'", '--- @include "includes/getPriorityScore";', ''].join('\n'));
    expect(lua).not.toContain('@include');
    for (const name of ['addBaseMarkerIfNeeded', 'getPriorityScore', 'addJobInTargetList', 'addJobWithPriority', 'promoteDelayedJobs']) {
      expect(count(lua, `local function ${name}(`), name).toBe(1);
    }
    // promoteDelayedJobs asks for addJobWithPriority (and that for getPriorityScore): both come before it.
    expect(lua.indexOf('local function getPriorityScore(')).toBeLessThan(lua.indexOf('local function addJobWithPriority('));
    expect(lua.indexOf('local function addJobWithPriority(')).toBeLessThan(lua.indexOf('local function promoteDelayedJobs('));
  });

  it("builds every one of BullMQ's scripts exactly as BullMQ ships it built", () => {
    const scripts = path.join(bullmqCommandsDir(), '..', 'scripts');
    const require = createRequire(import.meta.url);
    const files = readdirSync(bullmqCommandsDir()).filter((f) => f.endsWith('.lua'));
    expect(files).toContain('moveToFinished-14.lua');
    for (const file of files) {
      const name = file.replace(/-\d+\.lua$|\.lua$/, '');
      const shipped = (require(path.join(scripts, file.replace(/\.lua$/, '.js'))) as Record<string, { content: string }>)[name];
      expect(shipped, file).toBeDefined();
      expect(withoutEmptyLines(bullmqLua(bullmqFileText(file))), file).toBe(shipped?.content);
    }
  });

  it('throws an error naming an include that is not there, and where it looked', () => {
    expect(() => bullmqLua('--- @include "includes/noSuchFunction"\n')).toThrow(/"includes\/noSuchFunction".*not found/);
    expect(() => bullmqLua('--- @include "includes/noSuchFunction"\n')).toThrow(bullmqCommandsDir());
    expect(() => bullmqLua('--- @include "includes/removeLock"\n--- @include "includes/removeLock"\n')).toThrow(/included twice/);
  });

  it('leaves Lua without include lines as it is', () => {
    const lua = "local x = 1\n-- @include is only a line of its own\nreturn x\n";
    expect(bullmqLua(lua)).toBe(lua);
  });
});

describe('what bullmqLua builds', () => {
  let server: RedisServerHandle;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server.stop();
  });

  it("runs in Redis through defineScript and runScript: BullMQ's prepareJobForProcessing takes a job", async () => {
    const script = defineScript(
      bullmqLua(`local rcall = redis.call
--- @include "includes/prepareJobForProcessing"
local opts = {token = ARGV[2], lockDuration = ARGV[3], name = ARGV[4]}
return prepareJobForProcessing(ARGV[1], KEYS[1], KEYS[2], ARGV[5], ARGV[6], nil, nil, KEYS[3], opts)
`),
    );
    const redis = server.client();
    await redis.hset('q:7', 'name', 'j', 'data', '{}', 'timestamp', 1);
    const reply = (await runScript(redis, script, ['q:limiter', 'q:events', 'q:marker'], ['q:', 'tok-1', 30_000, 'w1', '7', 1234])) as [string[], string, number, number];
    expect(reply.slice(1)).toEqual(['7', 0, 0]);
    const hash = Object.fromEntries(reply[0].flatMap((v, i, a) => (i % 2 ? [] : [[v, a[i + 1]]])));
    expect(hash).toMatchObject({ name: 'j', processedOn: '1234', pb: 'w1', ats: '1' });
    expect(await redis.get('q:7:lock')).toBe('tok-1');
    expect(await redis.pttl('q:7:lock')).toBeGreaterThan(29_000);
    expect(await redis.zrange('q:marker', '0', '-1', 'WITHSCORES')).toEqual(['0', '0']);
    const events = await redis.xrange('q:events', '-', '+');
    expect(events.map(([, f]) => f)).toEqual([['event', 'active', 'jobId', '7', 'prev', 'waiting']]);
    expect(await redis.exists('q:limiter')).toBe(0);
  });
});
