import { TickworkError } from '@tickwork/core';

/** Bad command-line input; the CLI prints the message and the command's usage, exit code 2. */
export class UsageError extends TickworkError {
  override name = 'UsageError';
}
