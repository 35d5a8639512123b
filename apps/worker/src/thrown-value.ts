import { inspect } from 'node:util';
import { isCancellationReason } from '@tickwork/operations';
import { TickworkError } from '@tickwork/core';
import { JobCancelledError } from './errors.js';

/** A handler threw something that is not an Error (a string, null, a plain object). */
export class NonErrorThrownError extends TickworkError {
  override name = 'NonErrorThrownError';
  constructor(readonly thrown: unknown) {
    super(describe(thrown));
  }
}

/**
 * BullMQ reads `err.message` of whatever the processor throws: `null` crashes its failure handling (the
 * job would stall instead of failing) and a string leaves the reason empty. Wrapping gives every failure
 * a reason an operator can read and a stack (of the wrapping point, the handler's own is gone).
 */
export function asError(thrown: unknown): Error {
  const err = thrown instanceof Error ? thrown : new NonErrorThrownError(thrown);
  // A failed reason starting `cancelled by ` reads as an operator's cancellation, which is neither
  // dead-lettered nor alerted (isCancellationReason): a handler's own error must never read as one, or its
  // failure would be lost.
  if (!(err instanceof JobCancelledError) && isCancellationReason(err.message)) err.message = `handler error: ${err.message}`;
  return err;
}

function describe(thrown: unknown): string {
  if (typeof thrown === 'string') return thrown === '' ? 'handler threw an empty string' : thrown;
  if (thrown === null || thrown === undefined) return `handler threw ${String(thrown)} instead of an Error`;
  return `handler threw a non-Error value: ${inspect(thrown, { depth: 2, breakLength: Infinity }).slice(0, 500)}`;
}
