import type { Writable } from 'node:stream';
import type { RedisClient } from '@tickwork/core';

/** Commands held by a corked connection's current turn, by its socket. */
const held = new WeakMap<Writable, { commands: number }>();

/**
 * Commands one cork holds at most: past it, what is held leaves at once and a new cork starts. Redis then
 * works on the first commands while the worker still makes the next ones (as with a bare BullMQ worker,
 * which writes each command at once), instead of both taking turns on all of a turn's commands.
 */
const GROUP = 16;

/**
 * Holds `redis`'s socket writes until the event loop's next check phase (setImmediate: after the microtasks
 * and ticks of this turn), so the commands many jobs send in one turn leave in a few system calls instead
 * of one each: measured with `pnpm bench`, a socket write cost a job more Node CPU than anything the
 * ledger does. Call it before each command to hold. Order is kept (corking only buffers), so what is sent
 * first still reaches Redis first. A connection not ready is left alone (ioredis queues offline commands),
 * and so is a cluster client (it has no one socket: its commands leave on each node's connection as sent).
 */
export function corkUntilTurnEnds(redis: RedisClient): void {
  const stream = (redis as unknown as { stream?: Writable }).stream;
  if (!stream || redis.status !== 'ready') return;
  const turn = held.get(stream);
  if (!turn) {
    held.set(stream, { commands: 1 });
    stream.cork();
    setImmediate(() => {
      held.delete(stream);
      stream.uncork();
    });
  } else if (++turn.commands > GROUP) {
    // Uncork and cork again: what is held leaves now, the rest of the turn is held anew.
    turn.commands = 1;
    stream.uncork();
    stream.cork();
  }
}

/** Connections whose every command is held (holdEveryCommand). */
const holdingAll = new WeakSet<object>();

/**
 * Holds every command written through `redis` until the turn ends (corkUntilTurnEnds before each), not only
 * those whose callers hold them: a scheduled run's bookkeeping (its overlap entry and exit, its start and end
 * records, the alert counter's reset) goes out as single commands from many jobs in the same turn, and
 * in a CPU profile of the worker on a herd of 30,000 (`pnpm bench:herd`), writing them one by one took 19% of
 * its CPU, 10% held. Wraps the client's own sendCommand, which every command, script and pipeline of it goes
 * through.
 */
export function holdEveryCommand(redis: RedisClient): void {
  if (holdingAll.has(redis)) return;
  holdingAll.add(redis);
  const client = redis as unknown as { sendCommand: (...args: unknown[]) => unknown };
  const send = client.sendCommand.bind(redis);
  client.sendCommand = (...args: unknown[]) => {
    corkUntilTurnEnds(redis);
    return send(...args);
  };
}
