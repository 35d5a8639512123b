import type { Command } from './command.js';
import { dbCommand } from './db.js';
import { devCommand } from './dev.js';
import { dlqCommand } from './dlq.js';
import { enqueueCommand } from './enqueue.js';
import { hashPasswordCommand } from './hash-password.js';
import { jobsCommand } from './jobs.js';
import { kedaCommand } from './keda.js';
import { processesCommand } from './processes.js';
import { schedulesCommand } from './schedules.js';
import { statsCommand } from './stats.js';

/** Every CLI command. Add one: a file in this folder and a line here. */
export const commands: readonly Command[] = [jobsCommand, enqueueCommand, schedulesCommand, devCommand, dlqCommand, statsCommand, processesCommand, dbCommand, hashPasswordCommand, kedaCommand];
