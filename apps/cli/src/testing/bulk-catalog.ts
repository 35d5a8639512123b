/** A catalog for CLI tests (JOBS_MODULE): one job whose payload may be large. */
import { createCatalog, defineJob } from '@tickwork/core';
import { z } from 'zod';

export const bulkImport = defineJob({
  name: 't.bulk-import',
  queue: 'bulk',
  schema: z.object({ rows: z.array(z.string()) }),
  handler: async () => undefined,
});

export const catalog = createCatalog([bulkImport]);
