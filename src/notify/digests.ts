// Scheduled digests: bills due in the next 7 days, overdue bills and overdue invoices, daily or weekly in BOT_TIMEZONE,
// posted only when what they show changed, at most once per channel and slot across restarts and instances.
// A channel's schedule is kept with its subscriptions (subscriptions.ts). NS.digests keys start with the channel key
// (removing the bot from a team removes them): "<channel>|last" (fingerprint of the last posted digest),
// "<channel>|slot|<slot id>" (and |lease).
import { createHash } from 'node:crypto';
import { errorMessage } from '../errors.js';
import type { Priority } from '../infra/limits/types.js';
import type { Mirror } from '../mirror/mirror.js';
import { isOwedBill } from '../mirror/records.js';
import { BillFilter } from '../bill/filters.js';
import type { Bill, Invoice } from '../bill/types.js';
import { NS } from '../infra/state/types.js';
import { slotClaims, slotJob } from './jobs.js';
import { addDays, calendarDay, dateInZone } from '../infra/calendar.js';
import { dueSlot } from './schedule.js';
import type { WorkerDeps } from './worker.js';
import { channelKey, channelScope, type ChannelSubscriptions, type DigestSetting } from './subscriptions.js';
import { removedFromChannel, type NotifyDeps } from './types.js';

/** Pages read per list (100 rows each). */
const MAX_PAGES = 10;

/** A bill or invoice as a digest row: its vendor or customer, and what is still due when. */
export interface DigestRow {
  id: string;
  number: string;
  partyId: string;
  partyName: string;
  dueDate: string;
  dueAmount: number;
  currency?: string;
}

/** What a digest shows; `fingerprint` hashes it (equal fingerprints: nothing changed). */
export type DigestContent = Awaited<ReturnType<ReturnType<typeof digestComposer>>>;

/** Gathers what a digest shows. Bill lists are kept per org for CACHE_TTL_LIST_S (webhooks drop them): many channels cost one load. */
export function digestComposer(
  deps: Pick<NotifyDeps, 'bill' | 'log'> & { mirror: Pick<Mirror, 'answers' | 'names' | 'rows'>; listTtlS: number; timeZone: string },
) {
  const { mirror } = deps;
  return async (orgId: string, now: number, cadence: 'daily' | 'weekly' | 'now') => {
    // A digest asked for now is read while someone waits; a scheduled one goes behind interactive calls.
    const priority: Priority = cadence === 'now' ? 'interactive' : 'background';
    const today = dateInZone(now, deps.timeZone);
    const org = deps.bill.org(orgId, { priority });
    const unpaid = (key: string, dueDate: { gte?: string; lte?: string; lt?: string }) =>
      mirror.answers.get(orgId, key, { ttlS: deps.listTtlS, kinds: ['bill'] }, async () => {
        const r = await org.bills
          .list({
            dueDate,
            archived: false,
            filter: new BillFilter().add('paymentStatus', 'ne', 'PAID'),
            sort: [{ field: 'dueDate', order: 'asc' }],
            maxPages: MAX_PAGES,
          })
          .all();
        return { items: r.items.filter(isOwedBill).map(digestBill), truncated: r.truncated };
      });
    const until = addDays(today, 6);
    const [due, overdue] = await Promise.all([
      unpaid(`digest.bills.due?from=${today}&to=${until}`, { gte: today, lte: until }),
      unpaid(`digest.bills.overdue?before=${today}`, { lt: today }),
    ]);
    // Undefined while the invoice index is still being built.
    let invoices: DigestRow[] | undefined;
    let invoicesAsOf = now;
    const answer = await mirror.rows(orgId, 'invoice', { maxAgeMs: 60_000, waitMs: priority === 'interactive' ? 8_000 : 20_000 });
    if ('rows' in answer) {
      invoicesAsOf = answer.refreshedAt;
      invoices = answer.rows
        .filter((i) => !i.archived && i.dueAmount > 0 && i.status !== 'PAID' && (calendarDay(i.dueDate) ?? today) < today)
        .sort((a, b) => a.dueDate.localeCompare(b.dueDate))
        .map(digestInvoice);
    }
    // Copies: names are filled in below, the cached lists stay as BILL sent them.
    const dueSoon = due.value.items.map((b) => ({ ...b }));
    const overdueBills = overdue.value.items.map((b) => ({ ...b }));
    // Vendor names bills lack, customer names and currencies.
    try {
      for (const [kind, rows] of [
        ['vendor', [...dueSoon, ...overdueBills]],
        ['customer', invoices ?? []],
      ] as const) {
        const ids = rows.map((r) => r.partyId);
        const names = await mirror.names(orgId, kind, ids, { priority, waitMs: 20_000 });
        for (const r of rows) {
          const party = names.get(r.partyId);
          if (party && (kind === 'customer' || !r.partyName)) r.partyName = party.name;
          r.currency ??= party?.currency;
        }
      }
    } catch (err) {
      deps.log.info({ orgId, err: errorMessage(err) }, 'digest names could not be looked up');
    }
    const shown = (rows: DigestRow[] | undefined) => rows?.map((r) => [r.id, r.dueAmount, r.dueDate]) ?? null;
    return {
      orgId,
      today,
      cadence,
      dueSoon,
      overdueBills,
      overdueInvoices: invoices,
      truncated: due.value.truncated || overdue.value.truncated,
      asOf: Math.min(due.fetchedAt, overdue.fetchedAt, invoicesAsOf),
      fingerprint: createHash('sha256')
        .update(JSON.stringify([shown(dueSoon), shown(overdueBills), shown(invoices)]))
        .digest('base64url'),
    };
  };
}

/** A bill as a digest row (its vendor's name and currency are filled in later). */
export function digestBill(b: Pick<Bill, 'id' | 'invoice' | 'vendorId' | 'vendorName' | 'dueDate' | 'dueAmount' | 'amount'>): DigestRow {
  return {
    id: b.id,
    number: b.invoice?.invoiceNumber ?? '',
    partyId: b.vendorId,
    partyName: b.vendorName ?? '',
    dueDate: b.dueDate,
    dueAmount: b.dueAmount ?? b.amount,
  };
}

/** An invoice as a digest row (its customer's name and currency are filled in later). */
export function digestInvoice(i: Pick<Invoice, 'id' | 'invoiceNumber' | 'customerId' | 'dueDate' | 'dueAmount'>): DigestRow {
  return { id: i.id, number: i.invoiceNumber, partyId: i.customerId, partyName: '', dueDate: i.dueDate, dueAmount: i.dueAmount };
}

type SchedulerDeps = Pick<WorkerDeps, 'state' | 'clock' | 'log' | 'resolveOrg' | 'sender' | 'presenter' | 'onChannelGone'> & {
  timeZone: string;
  subscriptions: Pick<ChannelSubscriptions, 'digests'>;
  compose: ReturnType<typeof digestComposer>;
};

/** Posts every digest whose slot has come on each tick (a tick called while one runs gets a fresh run after it). */
export function digestScheduler(deps: SchedulerDeps) {
  const { state } = deps;
  const claim = slotClaims(state, deps.clock, NS.digests);

  const postSlot = async (setting: DigestSetting, now: number) => {
    const slot = dueSlot(setting.schedule, setting.createdAt, now, deps.timeZone);
    if (!slot) return;
    const key = channelKey(setting);
    return claim(`${key}|slot|${slot.id}`, async ({ sending, reopen }) => {
      const log = deps.log.child({ teamId: setting.teamId, channelId: setting.channelId, slot: slot.id });
      const orgId = await deps.resolveOrg(channelScope(setting));
      if (!orgId) {
        log.info('digest skipped: the team is not bound to a BILL organisation');
        return;
      }
      const content = await deps.compose(orgId, now, setting.schedule.every);
      const lastKey = `${key}|last`;
      const last = await state.get<{ fingerprint: string }>(NS.digests, lastKey);
      if (last?.fingerprint === content.fingerprint) {
        log.info('digest skipped: nothing changed since the last one');
        return 'unchanged';
      }
      // Drawn before the slot is marked as being sent: a card that cannot be drawn leaves the slot open for a later tick.
      const message = deps.presenter.digest(content);
      // Composing can take a while: a worker that lost the slot's lease meanwhile leaves the slot to the new holder.
      if (!(await sending())) return;
      const outcome = await deps.sender.send(setting.reference, message);
      if (outcome.ok) {
        await state.set(NS.digests, lastKey, { fingerprint: content.fingerprint });
        log.info('digest posted');
        return 'posted';
      }
      const removed = removedFromChannel(outcome);
      if (removed) {
        await deps.onChannelGone(setting, removed);
        log.warn({ status: outcome.status, code: outcome.code }, 'digest not posted: the bot is no longer in the channel');
        return;
      }
      // Not sent: a later tick within the catch-up window tries again.
      await reopen();
      log.warn({ status: outcome.status, code: outcome.code }, 'digest send failed; will try again');
      return 'failed';
    });
  };

  return slotJob({
    what: 'digest scheduler',
    clock: deps.clock,
    log: deps.log,
    outcomes: { posted: 0, unchanged: 0 },
    items: () => deps.subscriptions.digests(),
    post: postSlot,
    failed: (setting, err) =>
      deps.log.warn({ teamId: setting.teamId, channelId: setting.channelId, err: errorMessage(err) }, 'digest failed; will try again'),
  });
}
