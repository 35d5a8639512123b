/**
 * DLQ job ids. BullMQ ids cannot contain ':' (scheduler runs are `repeat:<id>:<ms>`), so the origin id is
 * escaped reversibly. The origin job's creation time is part of the id: it is the same for every attempt
 * of one job (so a repeated move is a no-op), but differs when an id is reused after the first job is
 * gone, so a later run with the same custom id is never swallowed by an old entry.
 */
export function escapeJobId(id: string): string {
  return id.replace(/%/g, '%25').replace(/:/g, '%3A');
}

export function deadLetterJobId(origin: { id: string; timestamp: number }): string {
  return `${escapeJobId(origin.id)}@${origin.timestamp}`;
}

/**
 * The id a re-driven job gets: derived from the first DLQ entry of its history and the re-drive count, so
 * re-running an interrupted re-drive adds nothing new (BullMQ ignores an add whose id exists), successive
 * re-drives get distinct ids, and the ids do not grow with each round trip.
 */
export function redrivenJobId(rootDlqJobId: string, redriveCount: number): string {
  return `rd${redriveCount}.${rootDlqJobId}`;
}
