// `payments [N]`: the last N bill payments to vendors (default 10, at most 50), newest process date first.
import { answerKey } from '../../mirror/answers.js';
import { paymentsCard } from './cards.js';
import { withVendorNames, type PayablesDeps } from '../payables/commands.js';
import type { Mirror } from '../../mirror/mirror.js';
import type { Command } from '../types.js';
import { boundOrg, cachedAnswer, countArgument, listContext, orgClient, resolveParties, todayOf } from '../finance.js';

/** What `payments` reads: BILL's payment list (kept as an answer in the mirror's answer cache) and vendor names. */
export interface PaymentsDeps extends Pick<PayablesDeps, 'bill' | 'settings'> {
  mirror: Pick<Mirror, 'names' | 'answers' | 'dropAnswer'>;
}

const DEFAULT_PAYMENTS = 10;
const MAX_PAYMENTS = 50;

export const paymentsCommand: Command<PaymentsDeps> = {
  name: 'payments',
  usage: 'payments [count]',
  description: 'The last 10 (or up to 50) bill payments: vendor, amount, process date and status in words',
  examples: ['payments', 'payments 25'],
  upstream: true,
  rank: 55,
  async run(ctx, deps) {
    const limit = countArgument(ctx, {
      min: 1,
      max: MAX_PAYMENTS,
      fallback: DEFAULT_PAYMENTS,
      unit: 'payments',
      hint: `Type **payments** for the last ${DEFAULT_PAYMENTS}, or **payments 25** for up to ${MAX_PAYMENTS}.`,
    });
    const orgId = boundOrg(ctx);
    // One page of the last MAX_PAYMENTS answers every count: "payments" and "payments 25" share one call.
    // A new payment changes the bill it pays (bill.updated); BILL documents no "payment created" event.
    const got = await cachedAnswer(ctx, deps, answerKey('payments.last', { n: MAX_PAYMENTS }), ['payment', 'bill'], async () => {
      const sort = [{ field: 'processDate', order: 'desc' } as const];
      return (await orgClient(deps, orgId).payments.list({ pageSize: MAX_PAYMENTS, maxPages: 1, sort }).take(MAX_PAYMENTS)).items;
    });
    const shown = got.value.slice(0, limit);
    const vendors = await resolveParties(deps, orgId, 'vendor', new Set(shown.map((p) => p.vendorId)));
    return paymentsCard({
      ...listContext(ctx, deps, `payments ${limit}`, got.fetchedAt),
      payments: withVendorNames(shown, vendors),
      limit,
      today: todayOf(ctx, deps),
      currencyOf: (id) => vendors.get(id)?.currency,
    });
  },
};
