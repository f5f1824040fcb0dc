// Every card billbridge sends, filled from the embedded sandbox's demo organisation (seeded in memory, no server), plus
// empty and error states: the gallery page renders them, and a test checks each one parses at 1.5 and stays small.
import { ManualClock } from '../src/infra/clock.js';
import type { BillStatus } from '../src/bill/gateway.js';
import type { Bill, Invoice, Vendor } from '../src/bill/types.js';
import {
  BillApiError,
  DependencyUnavailable,
  FilterValueError,
  Forbidden,
  InputError,
  LimitExceeded,
  NotBound,
  NotLinked,
  TenantNotAllowed,
} from '../src/errors.js';
import { SandboxModel } from '../src/sandbox/model.js';
import { seedDemoOrg } from '../src/sandbox/seed.js';
import type { BudgetSnapshot } from '../src/infra/limits/types.js';
import type { CardReply } from '../src/cards/card.js';
import { billCard, billMatchesCard, billsDueCard, billsOverdueCard } from '../src/features/payables/cards.js';

import { errorReply } from '../src/cards/errorCards.js';
import type { FormatOptions } from '../src/cards/format.js';
import { addDays, dateInZone } from '../src/infra/calendar.js';
import { helpCard, tooLongCard, unknownCommandCard } from '../src/cards/help.js';
import { invoiceCard, invoicesOverdueCard } from '../src/features/receivables/cards.js';
import { indexBuildingCard } from '../src/cards/list.js';
import { customerCard, partyMatchesCard, vendorCard } from '../src/features/parties/cards.js';
import { paymentsCard } from '../src/features/payments/cards.js';
import {
  budgetsCard,
  reimbursementsCard,
  spendNotConfiguredCard,
  spendOverviewCard,
  transactionsCard,
} from '../src/features/spend/cards.js';
import {
  auditSection,
  billSection,
  budgetsSection,
  cacheSection,
  conversationSection,
  statusCard,
  type ConversationStatus,
  type StatusCardOptions,
} from '../src/features/admin/status.js';
import { welcomeCard } from '../src/cards/welcome.js';
import { commandCatalogue } from '../src/features/index.js';
import { SANDBOX_NOTE } from '../src/cards/words.js';

import { rankMatches } from '../src/features/parties/commands.js';
import { digestCard, notificationCard } from '../src/features/notifications/cards.js';
import { projectEntity } from '../src/notify/project.js';
import { digestBill, digestInvoice } from '../src/notify/digests.js';
import { eventTypeInfo } from '../src/notify/kinds.js';
import type { OutboxEvent } from '../src/notify/types.js';
import { approvalsCard, digestSettingCard, nothingWaitingCard, refusalCard } from '../src/features/approvals/cards.js';
import type { ApprovalCardBill, ApprovalCardState } from '../src/features/approvals/cardRecords.js';

export interface GalleryCard {
  /** Section of the gallery: "Payables", "Errors"... */
  group: string;
  /** What the card shows, e.g. "bills due (demo organisation)". */
  name: string;
  reply: CardReply;
}

export interface GalleryOptions {
  /** The instant the demo data is seeded around (default: a fixed day, so the gallery is the same every run). */
  now?: number;
  locale?: string;
  timeZone?: string;
  version?: string;
}

const DEFAULT_NOW = Date.parse('2026-03-10T15:30:00.000Z');

const unpaid = (b: Bill) => !b.archived && b.paymentStatus !== 'PAID';
const line = ({ billLineItems: _l, ...b }: Bill): Bill => b;

/** The cards, in the order the gallery shows them. */
export function galleryCards(opts: GalleryOptions = {}): GalleryCard[] {
  // The seeded demo organisation always has these records; a missing one is a seed bug, said plainly.
  const must = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`gallery: the demo organisation has no ${what}`);
    return value;
  };
  const now = opts.now ?? DEFAULT_NOW;
  const fmt: FormatOptions = { locale: opts.locale ?? 'en-US', timeZone: opts.timeZone ?? 'UTC' };
  const version = opts.version ?? '0.0.0';
  const model = new SandboxModel(new ManualClock(now));
  const creds = seedDemoOrg(model);
  const org = must(model.org(creds.orgId), 'organisation');
  const today = dateInZone(now, fmt.timeZone);
  const note = SANDBOX_NOTE;
  const vendors = new Map(org.vendors.all().map((v) => [v.id, v]));
  const customers = new Map(org.customers.all().map((c) => [c.id, c]));
  // What every card of the demo organisation is given: today, formats, "as of" and the demo note.
  const base = { today, fmt, asOf: now, note };
  const firstPage = { ...base, page: 0 };
  const ap = {
    ...base,
    currencyOf: (id: string) => vendors.get(id)?.billCurrency,
    vendorNameOf: (id: string) => vendors.get(id)?.name,
  };
  const ar = {
    ...base,
    customerOf: (id: string) => {
      const c = customers.get(id);
      return c ? { name: c.name, currency: c.invoiceCurrency } : undefined;
    },
  };
  const bills = org.bills.all();
  const dueIn = (days: number) => bills.filter((b) => unpaid(b) && b.dueDate >= today && b.dueDate <= addDays(today, days)).map(line);
  const overdue = bills.filter((b) => unpaid(b) && b.dueDate < today).map(line);
  const cards: GalleryCard[] = [];
  const add = (group: string, name: string, reply: CardReply) => cards.push({ group, name, reply });

  // Payables
  add('Payables', 'bills due', billsDueCard({ ...ap, days: 7, due: dueIn(7), overdue, page: 0, command: 'bills due 7' }));
  add('Payables', 'bills due 60 — page 2', billsDueCard({ ...ap, days: 60, due: dueIn(60), overdue, page: 1, command: 'bills due 60' }));
  add(
    'Payables',
    'bills due — nothing due, nothing overdue',
    billsDueCard({ ...ap, days: 0, due: [], overdue: [], page: 0, command: 'bills due 0' }),
  );
  add('Payables', 'bills overdue', billsOverdueCard({ ...ap, overdue, page: 0, command: 'bills overdue' }));
  add('Payables', 'bills overdue — none', billsOverdueCard({ ...ap, overdue: [], page: 0, command: 'bills overdue' }));
  const withApprovers =
    bills.find((b) => unpaid(b) && (b.approvers?.length ?? 0) > 1 && (b.billLineItems?.length ?? 0) > 1) ?? must(bills[0], 'bills');
  add(
    'Payables',
    'bill (with approvers and line items)',
    billCard({ ...ap, bill: withApprovers, command: `bill ${withApprovers.invoice?.invoiceNumber}` }),
  );
  const late = bills.find((b) => unpaid(b) && b.dueDate < today) ?? must(bills[0], 'bills');
  add('Payables', 'bill (overdue)', billCard({ ...ap, bill: late, command: `bill ${late.invoice?.invoiceNumber}` }));
  const twins = bills.slice(0, 3).map((b, i) => {
    const other = must(bills[(i * 7) % bills.length], 'bills');
    return line({ ...b, vendorId: other.vendorId, vendorName: other.vendorName, invoice: { invoiceNumber: 'INV-100' } });
  });
  add(
    'Payables',
    'bill — several vendors used the number',
    billMatchesCard({ ...ap, typed: 'INV-100', bills: twins, page: 0, command: 'bill INV-100' }),
  );
  const payments = org.payments.all().sort((a, b) => b.processDate.localeCompare(a.processDate) || a.id.localeCompare(b.id));
  add('Payables', 'payments', paymentsCard({ ...ap, payments: payments.slice(0, 10), limit: 10, page: 0, command: 'payments 10' }));
  add('Payables', 'payments — none yet', paymentsCard({ ...ap, payments: [], limit: 10, page: 0, command: 'payments 10' }));

  // Vendors and customers
  const openBills = (v: Vendor) => bills.filter((b) => unpaid(b) && b.vendorId === v.id).map(line);
  const acme = must(
    org.vendors.find((v) => v.name.startsWith('Acme')),
    'vendor Acme',
  );
  add(
    'Vendors and customers',
    'vendor Acme',
    vendorCard(acme, openBills(acme), { ...firstPage, others: 0, typed: 'Acme', command: 'vendor Acme' }),
  );
  const sw = rankMatches(
    'S',
    org.vendors.all().filter((v) => !v.archived && v.name.toLowerCase().startsWith('s')),
  );
  add(
    'Vendors and customers',
    'vendor S — several match',
    partyMatchesCard({
      kind: 'vendor',
      typed: 'S',
      matches: sw.map((v) => ({
        party: v,
        open: openBills(v).length,
        openAmount: openBills(v).reduce((s, b) => s + (b.dueAmount ?? 0), 0),
      })),
      more: false,
      command: 'vendor S',
      ...firstPage,
    }),
  );
  const openInvoices = (id: string) =>
    org.invoices.all().filter((i) => i.customerId === id && !i.archived && i.status !== 'PAID' && i.dueAmount > 0);
  const contoso = must(
    org.customers.find((c) => c.name.startsWith('Contoso')),
    'customer Contoso',
  );
  add(
    'Vendors and customers',
    'customer Contoso',
    customerCard(contoso, openInvoices(contoso.id), {
      ...firstPage,
      others: 0,
      typed: 'Contoso',
      command: 'customer Contoso',
    }),
  );
  const quiet = org.customers.all().find((c) => openInvoices(c.id).length === 0) ?? contoso;
  add(
    'Vendors and customers',
    'customer — no open invoices',
    customerCard(quiet, [], {
      ...firstPage,
      others: 2,
      typed: quiet.name.slice(0, 3),
      command: `customer ${quiet.name}`,
    }),
  );

  // Receivables
  const invoices = org.invoices.all();
  const pick = (pred: (i: Invoice) => boolean) => invoices.find(pred) ?? must(invoices[0], 'invoices');
  add(
    'Receivables',
    'invoice (partially paid)',
    invoiceCard({ ...ar, invoice: pick((i) => i.status === 'PARTIAL_PAYMENT'), command: 'invoice 1003' }),
  );
  add(
    'Receivables',
    'invoice (overdue)',
    invoiceCard({ ...ar, invoice: pick((i) => !i.archived && i.status === 'OPEN' && i.dueDate < today), command: 'invoice 1002' }),
  );
  add('Receivables', 'invoice (paid)', invoiceCard({ ...ar, invoice: pick((i) => i.status === 'PAID'), command: 'invoice 1004' }));
  add('Receivables', 'invoice (archived)', invoiceCard({ ...ar, invoice: pick((i) => i.archived), command: 'invoice 1005' }));
  add('Receivables', 'invoices overdue', invoicesOverdueCard({ ...ar, invoices, page: 0, command: 'invoices overdue' }));
  add('Receivables', 'invoices overdue — none', invoicesOverdueCard({ ...ar, invoices: [], page: 0, command: 'invoices overdue' }));
  add(
    'Receivables',
    'invoice — first lookup still indexing',
    indexBuildingCard({ what: 'invoices', indexed: 4_200, command: 'invoice 1042', fmt, asOf: now, note }),
  );

  // Spend & Expense
  const tx = org.spend.transactions.all().filter((t) => Date.parse(t.occurredTime) >= Date.parse(`${addDays(today, -30)}T00:00:00Z`));
  const reimbursements = org.spend.reimbursements.all();
  const budgets = org.spend.budgets.all().filter((b) => !b.retired);
  add('Spend & Expense', 'spend', spendOverviewCard({ ...base, transactions: tx, reimbursements, budgets }));
  add('Spend & Expense', 'spend transactions', transactionsCard({ ...firstPage, transactions: tx, command: 'spend transactions' }));
  add('Spend & Expense', 'spend reimbursements', reimbursementsCard({ ...firstPage, reimbursements, command: 'spend reimbursements' }));
  add('Spend & Expense', 'spend budgets', budgetsCard({ ...firstPage, budgets, command: 'spend budgets' }));
  add(
    'Spend & Expense',
    'spend reimbursements — none pending',
    reimbursementsCard({ ...firstPage, reimbursements: [], command: 'spend reimbursements' }),
  );
  add('Spend & Expense', 'spend — no API token configured', spendNotConfiguredCard());

  // Notifications: what a channel reads when BILL pushes an event, and the digest.
  const event = (type: string, entity: object, extra: Partial<OutboxEvent> = {}): OutboxEvent => {
    const info = must(eventTypeInfo(type), `event type ${type}`);
    return {
      v: 1,
      eventId: `gallery-${type}`,
      type,
      orgId: org.id,
      entityType: info.entity,
      entity: projectEntity(entity as Record<string, unknown>),
      errors: [],
      receivedAt: now,
      ...extra,
    };
  };
  const pushFmt = { ...fmt, note };
  const record = (b: Bill): Record<string, unknown> => ({ ...b, billLineItems: undefined });
  const notify = (name: string, ev: OutboxEvent) => add('Notifications', name, notificationCard(ev, pushFmt));
  // Every event type the channel cards put in words, with the demo organisation's records.
  const fresh = bills.find((b) => unpaid(b) && b.approvalStatus !== 'ASSIGNED') ?? must(bills[0], 'bills');
  const paidBill = bills.find((b) => b.paymentStatus === 'PAID') ?? must(bills[0], 'bills');
  const scheduledBill = bills.find((b) => b.paymentStatus === 'SCHEDULED') ?? must(bills[0], 'bills');
  notify('bill waiting for approval', event('bill.updated', record(withApprovers)));
  notify('new bill', event('bill.created', record(fresh)));
  notify('bill denied', event('bill.updated', { ...record(late), approvalStatus: 'DENIED' }));
  notify('bill paid', event('bill.updated', record(paidBill)));
  notify('bill payment scheduled', event('bill.updated', record(scheduledBill)));
  notify('bill archived', event('bill.archived', { ...record(late), archived: true }));
  notify('bill restored', event('bill.restored', record(late)));
  notify('bill without an invoice number changed', event('bill.updated', { ...record(fresh), invoice: undefined }));
  // An invoice event's card names the customer as the worker's look-up would.
  const invoiceEvent = (type: string, i: Invoice) =>
    event(type, { ...i, customerName: undefined }, { enrichment: { customerName: customers.get(i.customerId)?.name } });
  notify(
    'new invoice',
    invoiceEvent(
      'invoice.created',
      pick((i) => !i.archived && i.status === 'OPEN'),
    ),
  );
  notify(
    'invoice partly paid',
    invoiceEvent(
      'invoice.updated',
      pick((i) => i.status === 'PARTIAL_PAYMENT'),
    ),
  );
  notify(
    'invoice paid in full',
    invoiceEvent(
      'invoice.updated',
      pick((i) => i.status === 'PAID'),
    ),
  );
  notify('invoice archived', invoiceEvent('invoice.archived', { ...pick((i) => i.archived), archived: true }));
  const firstPayment = must(payments[0], 'payments');
  const failed = payments.find((p) => p.singleStatus.includes('FAILED')) ?? firstPayment;
  // A failed payment as BILL sends it: the bill by id only (no invoice number known yet), so the card shortens the id.
  notify(
    'payment failed (bill known by id only)',
    event(
      'payment.failed',
      { ...failed, billId: failed.billId ?? must(bills[0], 'bills').id },
      { errors: [{ code: 'DISBURSEMENT_FAILED', message: "The vendor's bank rejected the payment" }] },
    ),
  );
  notify(
    'payment sent',
    event(
      'payment.updated',
      { ...firstPayment, singleStatus: 'SENT' },
      { enrichment: { billNumbers: Object.fromEntries(bills.map((b) => [b.id, b.invoice?.invoiceNumber ?? ''])) } },
    ),
  );
  notify('payment scheduled', event('payment.updated', { ...firstPayment, singleStatus: 'SCHEDULED' }));
  notify(
    'AutoPay failed',
    event(
      'autopay.failed',
      { ...firstPayment, billId: undefined, billPayments: undefined },
      { errors: [{ code: 'AUTOPAY_LIMIT', message: 'The bill is above the AutoPay limit' }] },
    ),
  );
  const aVendor = org.vendors.all()[1] ?? acme;
  notify('new vendor', event('vendor.created', aVendor));
  notify('vendor updated', event('vendor.updated', aVendor));
  notify('vendor archived', event('vendor.archived', { ...aVendor, archived: true }));
  notify('vendor restored', event('vendor.restored', aVendor));
  const card = tx[0] ?? must(org.spend.transactions.all()[0], 'card transactions');
  notify('card transaction', event('spend.transaction.updated', card));
  notify(
    'card payment declined',
    event('spend.transaction.updated', { ...card, transactionType: 'DECLINE', declineReason: 'Over the budget limit' }),
  );
  const userNames = new Map(tx.map((t) => [t.userId, t.userName]));
  const claim = must(reimbursements[0], 'reimbursements');
  const claimEntity = { ...claim, userName: userNames.get(claim.userId) ?? 'Dana Reyes' };
  notify('reimbursement requested', event('spend.reimbursement.created', claimEntity));
  notify('reimbursement payment failed', event('spend.reimbursement.updated', { ...claimEntity, status: 'PAYMENT_FAILED' }));
  notify('reimbursement deleted', event('spend.reimbursement.deleted', claimEntity));
  notify('card payment needs a 3-D Secure check', event('spend.three-ds-challenge.created', card));
  const withCurrency = (b: Bill) => ({ ...digestBill(b), currency: vendors.get(b.vendorId)?.billCurrency });
  add(
    'Notifications',
    'daily digest',
    digestCard(
      {
        orgId: org.id,
        today,
        cadence: 'daily',
        dueSoon: dueIn(6).map(withCurrency),
        overdueBills: overdue.map(withCurrency),
        overdueInvoices: invoices
          .filter((i) => !i.archived && i.status !== 'PAID' && i.dueAmount > 0 && i.dueDate < today)
          .map((i) => ({ ...digestInvoice(i), partyName: customers.get(i.customerId)?.name ?? '' })),
        truncated: false,
        asOf: now,
        fingerprint: 'gallery',
      },
      pushFmt,
    ),
  );

  // Approvals: what an approver and their team see (the list with Approve / Deny and a comment box, the card after a
  // decision, the morning approvals digest, which is the same list sent to the approver's personal chat).
  const waiting = bills.filter((b) => unpaid(b) && b.approvalStatus === 'ASSIGNED').slice(0, 3);
  const approvalRows: ApprovalCardBill[] = (waiting.length >= 3 ? waiting : bills.filter(unpaid).slice(0, 3)).map((b, i) => ({
    billId: b.id,
    vendorName: b.vendorName ?? vendors.get(b.vendorId)?.name ?? 'Vendor',
    amount: b.amount,
    currency: vendors.get(b.vendorId)?.billCurrency,
    dueDate: b.dueDate,
    // One bill whose invoice number BILL did not return: the card names it by its shortened id.
    invoiceNumber: i === 2 ? undefined : b.invoice?.invoiceNumber,
  }));
  const approvalState = (kind: ApprovalCardState['kind'], rows: ApprovalCardBill[]): ApprovalCardState => ({
    id: 'gallery-approvals',
    tenantId: 'gallery-tenant',
    conversationId: 'gallery-conversation',
    kind,
    orgId: org.id,
    approver: { aadObjectId: 'gallery-aad', teamsUserId: 'gallery-user', name: 'Priya Natarajan' },
    bills: rows,
    more: 4,
    createdAt: now - 3_600_000,
    updatedAt: now,
  });
  const approvalOpts = { fmt, today, sign: () => 'gallery-signature', note };
  add(
    'Approvals',
    "approvals (the approver's own view: Approve / Deny, comment)",
    approvalsCard({ ...approvalOpts, state: approvalState('personal', approvalRows), actionable: true }),
  );
  add(
    'Approvals',
    'approvals (what the rest of the channel sees)',
    approvalsCard({ ...approvalOpts, state: approvalState('channel', approvalRows), actionable: false }),
  );
  const decided: ApprovalCardBill[] = [
    {
      ...must(approvalRows[0], 'approval rows'),
      decision: { action: 'APPROVE', byName: 'Priya Natarajan', at: now - 60_000, comment: 'Matches the purchase order' },
    },
    {
      ...must(approvalRows[1], 'approval rows'),
      decision: {
        action: 'DENY',
        byName: 'Priya Natarajan',
        at: now - 30_000,
        comment: "Duplicate of last month's invoice, please check with the vendor",
      },
    },
    { ...must(approvalRows[2], 'approval rows'), gone: true },
  ];
  add(
    'Approvals',
    'approval result (approved, denied, passed on)',
    approvalsCard({
      ...approvalOpts,
      state: approvalState('personal', decided),
      actionable: true,
      notice: { text: "Denied in BILL. The vendor's bill stays unpaid.", tone: 'good' },
    }),
  );
  add(
    'Approvals',
    'approval refused (not the approver)',
    approvalsCard({
      ...approvalOpts,
      state: approvalState('channel', approvalRows),
      actionable: false,
      notice: { text: 'Only the assigned approver can act: Priya Natarajan. Nothing was changed.', tone: 'attention' },
    }),
  );
  add(
    'Approvals',
    'approvals digest (personal chat, morning)',
    approvalsCard({ ...approvalOpts, state: { ...approvalState('personal', approvalRows), more: 0 }, actionable: true }),
  );
  add(
    'Approvals',
    'approvals digest setting',
    digestSettingCard({ time: '08:30', changed: true, nextDate: addDays(today, 1), fmt: { ...fmt, timeZone: 'America/New_York' } }),
  );
  add('Approvals', 'nothing waiting', nothingWaitingCard({ name: 'Priya Natarajan', personal: false, asOf: now, fmt, note }));
  add(
    'Approvals',
    'expired card',
    refusalCard('This approval card has expired', 'Nothing was changed. Type **approvals** for a fresh list.'),
  );

  // The bot itself
  const registry = commandCatalogue();
  add('billbridge', 'help', helpCard(registry.forScope('channel'), { note, version }));
  add('billbridge', 'unknown command with a suggestion', unknownCommandCard('bils due', registry.get('bills due')));
  add('billbridge', 'unknown command', unknownCommandCard('what is the weather', undefined));
  add('billbridge', 'message too long', tooLongCard(4_200, 1_000));
  const statusOpts: StatusCardOptions = { ...fmt, version, now, note };
  const conversation: ConversationStatus = {
    mode: 'single',
    binding: { state: 'bound', orgId: org.id, source: 'deployment' },
    install: { installedAt: now - 86_400_000, name: 'Finance' },
    graph: 'skipped — local mode: no MicrosoftAppId, so Graph is not called',
  };
  const billStatus: BillStatus = {
    backend: 'sandbox',
    baseUrl: 'http://127.0.0.1:4010/connect',
    sessions: [
      {
        orgId: org.id,
        loggedIn: true,
        sessionAgeMs: 14 * 60_000,
        idleMs: 40_000,
        logins: 2,
        lastError: { category: 'session', code: 'BDC_1109', at: now - 20 * 60_000 },
      },
    ],
    loginsLastHour: 2,
    spendConfigured: true,
    reachable: true,
  };
  const budget = (name: string, key: string, limit: number, used: number, running: number, windowMs?: number): BudgetSnapshot => ({
    budget: name,
    key,
    limit,
    used,
    remaining: limit - used,
    queued: 0,
    running,
    rejected: 0,
    windowMs,
  });
  const budgetRows = [
    budget('bill.requests', 'k1a2b3c4d5e6f', 20_000, 412, 1, 3_600_000),
    budget('bill.concurrency', `k1a2b3c4d5e6f/${org.id}`, 3, 1, 1),
    budget('spend.requests', 'k9f8e7d6c5b4a', 60, 3, 0, 60_000),
    { ...budget('connector.thread', '*', 7, 1, 0, 1_000), keys: 4 },
  ];
  add(
    'billbridge',
    'status',
    statusCard(
      [
        conversationSection(conversation, 'channel', fmt, true),
        billSection(
          billStatus,
          org.id,
          [
            {
              kind: 'invoice',
              records: invoices.length,
              complete: true,
              scope: 'all',
              builtAt: now - 3_600_000,
              refreshedAt: now - 30_000,
            },
          ],
          fmt,
        ),
        budgetsSection(budgetRows, statusOpts, { admin: true }),
        cacheSection({ hits: 40, misses: 12, entries: 9 }, fmt),
        auditSection('/var/lib/billbridge/audit.log'),
      ],
      statusOpts,
    ),
  );
  add(
    'billbridge',
    'welcome (team, bound)',
    welcomeCard({
      kind: 'channel',
      teamName: 'Finance',
      binding: conversation.binding,
      sandbox: true,
      commands: registry.forScope('channel'),
      version,
    }),
  );
  add(
    'billbridge',
    'welcome (team, not linked)',
    welcomeCard({
      kind: 'channel',
      teamName: 'Finance',
      binding: { state: 'unbound', reason: 'notLinked' },
      sandbox: false,
      commands: registry.forScope('channel'),
      version,
    }),
  );

  // Errors: the one place errors become cards.
  const ctx = {
    correlationId: 'a1b2c3d4e5f6',
    retryCommand: 'bills due 7',
    timeIn: (ms: number) => new Date(now + ms).toISOString().slice(11, 16),
  };
  const errors: Array<[string, unknown]> = [
    [
      'bad number',
      new InputError(
        'I can\'t read "next week" as a number of days',
        'Type **bills due** for the next 7 days, or **bills due 14** for any number of days up to 90.',
        'bills due next week',
      ),
    ],
    [
      'unknown invoice',
      new InputError(
        'No invoice 99999',
        "Check the number on the invoice. To see a customer's open invoices, type **customer <name>**.",
        'invoice 99999',
      ),
    ],
    [
      'no vendor matches',
      new InputError(
        'No vendor starts with "Zzyzx"',
        'Check the spelling, or type fewer letters of the name, e.g. **vendor Zzy**.',
        'vendor Zzyzx',
      ),
    ],
    ['refused search text', new FilterValueError('name', 'value contains a double quote')],
    ['BILL busy', new LimitExceeded('bill.concurrency', 4_000, 'busy')],
    ['BILL hourly limit', new LimitExceeded('bill.requests', 1_740_000, 'hourly')],
    ['BILL sign-in limit', new LimitExceeded('bill.logins', 600_000, 'logins')],
    ['too many commands from one person', new LimitExceeded('user.commands', 20_000, 'userRate')],
    ['tenant not allowed', new TenantNotAllowed()],
    ['team not linked', new NotBound('unbound')],
    ['linked organisation no longer allowed', new NotBound('orgNotAllowed')],
    ['personal BILL link needed', new NotLinked()],
    ['not allowed', new Forbidden('Only billbridge admins can link this team to a BILL organisation. Ask your billbridge administrator.')],
    ['shared store down', new DependencyUnavailable('redis')],
    ['not found in BILL', new BillApiError({ category: 'notFound', status: 404, code: 'BDC_1205' })],
    ['BILL sign-in failed', new BillApiError({ category: 'credentials', status: 401, code: 'BDC_1101' })],
    ['BILL server error', new BillApiError({ category: 'server', status: 500 })],
    ['unexpected error', new Error('boom')],
  ];
  for (const [name, err] of errors) add('Errors', name, errorReply(err, ctx));
  return cards;
}
