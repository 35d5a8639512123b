import { TickworkError } from '@tickwork/core';

export class LockNotAcquiredError extends TickworkError {
  override name = 'LockNotAcquiredError';
  constructor(readonly lockName: string, readonly waitedMs: number) {
    super(
      `could not acquire lock "${lockName}" within ${waitedMs} ms: another holder has it. ` +
        'Raise waitMs to wait longer, or let the job fail and retry later',
    );
  }
}

/** The lock expired (or was taken) while its holder was still working: exclusion is no longer guaranteed. */
export class LockLostError extends TickworkError {
  override name = 'LockLostError';
  constructor(readonly lockName: string, detail: string) {
    super(
      `lost lock "${lockName}" while holding it (${detail}); the work done under it may overlap with the next ` +
        'holder. Guard writes with the fencing token, and raise ttlMs if the holder is often slower than it',
    );
  }
}

/** A write carried a fencing token older than one the resource has already seen: its holder lost the lock. */
export class StaleFencingTokenError extends TickworkError {
  override name = 'StaleFencingTokenError';
  constructor(
    readonly resource: string,
    readonly token: number,
    readonly latest: number,
  ) {
    super(
      `refused write to "${resource}": fencing token ${token} is older than ${latest}, so its lock was lost ` +
        'to a newer holder; re-read the resource and retry under a fresh lock',
    );
  }
}

export class InvalidLockOptionsError extends TickworkError {
  override name = 'InvalidLockOptionsError';
  constructor(readonly lockName: string, detail: string) {
    super(`withLock(${JSON.stringify(lockName)}): ${detail}`);
  }
}
