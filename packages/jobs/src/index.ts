import { createCatalog } from 'tickwork';
import { billingChargeMonthly } from './jobs/billing-charge-monthly.js';
import { digestMorning } from './jobs/digest-morning.js';
import { digestUser } from './jobs/digest-user.js';
import { digestWeekly } from './jobs/digest-weekly.js';
import { emailSend } from './jobs/email-send.js';
import { reportsDailyRevenue } from './jobs/reports-daily-revenue.js';
import { sessionsCleanup } from './jobs/sessions-cleanup.js';

export { billingChargeMonthly, digestMorning, digestUser, digestWeekly, emailSend, reportsDailyRevenue, sessionsCleanup };
export { DEMO_CUSTOMERS, DEMO_KEYS, type ChargeRecord } from './demo-data.js';

/** Every job tickwork runs. Add a job: create a file in ./jobs and list it here. */
export const catalog = createCatalog([
  billingChargeMonthly,
  reportsDailyRevenue,
  sessionsCleanup,
  digestWeekly,
  digestMorning,
  digestUser,
  emailSend,
]);
