// The dashboard tab's figures for one organisation and person: the same functions the cards are built from (bills due,
// invoices overdue, approvals waiting for me) and the organisation's last webhook events, as plain JSON.
import { NotLinked } from '../errors.js';
import { calendarDate, money } from '../cards/format.js';
import { currencyTotals, type Amount } from '../cards/words.js';
import type { CommandContext } from '../features/types.js';
import { billsDueFigures, DEFAULT_DUE_DAYS, type PayablesDeps } from '../features/payables/commands.js';
import { amountDue, AGING_BUCKETS, cashOutPeriods } from '../features/payables/cards.js';
import { overdueInvoices, type ReceivablesDeps } from '../features/receivables/commands.js';
import { agedOverdue } from '../features/receivables/cards.js';
import type { Approvals } from '../features/approvals/service.js';
import type { TabEvent } from './events.js';
import { NS, type StateStore } from '../infra/state/types.js';
import { TabRefused } from './sso.js';

export interface DashboardDeps {
  payables: PayablesDeps;
  receivables: ReceivablesDeps;
  /** Undefined without SECRETS_KEY (approvals are off). */
  approvals: Approvals | undefined;
  state: Pick<StateStore, 'get'>;
}

/** The figures for the organisation of `ctx` (its orgId, person and locale), as of now, as the tab's page reads them. */
export async function dashboard(ctx: CommandContext, deps: DashboardDeps) {
  const locale = ctx.locale ?? deps.payables.settings.locale;
  const orgId = ctx.orgId ?? '';
  const [bills, invoices, approvals, events] = await Promise.all([
    billsDueFigures(ctx, deps.payables, DEFAULT_DUE_DAYS),
    overdueInvoices(ctx, deps.receivables),
    waitingForMe(ctx, deps.approvals, locale),
    deps.state.get<TabEvent[]>(NS.tabEvents, orgId),
  ]);
  if ('building' in invoices)
    throw new TabRefused(
      503,
      "billbridge is still reading this organisation's invoices from BILL. Try again in a minute.",
      'mirror building',
      60,
    );
  const billAmount = (b: (typeof bills.due)[number]): Amount => ({
    amount: amountDue(b),
    currency: bills.currencyOf(b.vendorId),
  });
  const periods = cashOutPeriods(bills.today, DEFAULT_DUE_DAYS, locale);
  const aged = agedOverdue(invoices.invoices, invoices.today, (id) => invoices.customerOf(id)?.currency);
  return {
    org: { name: deps.payables.settings.note ?? `BILL organisation ${orgId}` },
    asOf: new Date(Math.min(bills.asOf, invoices.asOf)).toISOString(),
    locale,
    payables: {
      dueCount: bills.due.length,
      due: currencyTotals(bills.due.map(billAmount), locale),
      overdueCount: bills.overdue.length,
      overdue: currencyTotals(bills.overdue.map(billAmount), locale),
      byDay: periods.list.map((p) => ({
        label: p.label,
        amounts: currencyTotals(
          bills.due.filter((b) => b.dueDate.slice(0, 10) >= p.from && b.dueDate.slice(0, 10) <= p.to).map(billAmount),
          locale,
        ),
      })),
    },
    receivables: {
      owedCount: aged.length,
      owed: currencyTotals(aged, locale),
      aging: AGING_BUCKETS.map((bucket, i) => ({
        label: bucket.label,
        amounts: currencyTotals(
          aged.filter((a) => a.bucket === i),
          locale,
        ),
      })),
    },
    approvals,
    events: events ?? [],
  };
}

/**
 * The bills waiting for the person in BILL, read in their own session; null when they have not connected to this
 * organisation (or approvals are off).
 */
async function waitingForMe(ctx: CommandContext, approvals: Approvals | undefined, locale: string) {
  const { scope, caller, orgId } = ctx;
  if (!approvals || !orgId || !scope.tenantId || !caller.aadObjectId) return null;
  const link = await approvals.links.get({ tenantId: scope.tenantId, aadObjectId: caller.aadObjectId, orgId });
  if (!link) return null;
  try {
    const { rows } = await approvals.pending(link);
    return rows.map((r) => ({
      kind: 'bill' as const,
      number: r.invoiceNumber ?? '',
      party: r.vendorName,
      amount: { currency: r.currency ?? 'USD', amount: r.amount, text: money(r.amount, r.currency, locale) },
      due: calendarDate(r.dueDate, locale),
    }));
  } catch (err) {
    // BILL refused the person's own token: their link went stale, as if they had never connected.
    if (err instanceof NotLinked) return null;
    throw err;
  }
}
