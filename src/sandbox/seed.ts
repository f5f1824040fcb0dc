// The deterministic demo organisation, seeded relative to the sandbox clock's today: same ids and amounts on every
// start with the same seed and sizes; dates move with today so "due this week" always has rows.
import { randomBytes } from 'node:crypto';
import type {
  Approver,
  Bill,
  BillLineItem,
  Budget,
  Customer,
  Invoice,
  Payment,
  ReceivablePayment,
  Reimbursement,
  SpendTransaction,
  Vendor,
} from './types.js';
import { addDays, ID_PREFIX, newOrg, type SandboxModel, type SandboxUser } from './model.js';
import { Prng } from './prng.js';

export interface SeedOptions {
  /** PRNG seed; the same seed and sizes give the same organisation. */
  seed?: string;
  /** Number of bills (default 60). */
  bills?: number;
  /** Number of invoices (default 80). */
  invoices?: number;
  /** Number of S&E card transactions (default 150). */
  transactions?: number;
  /** Fixed credentials instead of fresh random ones (e.g. `npm run sandbox -- --dev-key ...`). */
  credentials?: Partial<DemoCredentials>;
}

/** What a client needs to talk to the demo organisation. */
export interface DemoCredentials {
  devKey: string;
  username: string;
  password: string;
  orgId: string;
  /** The signed-in demo user (an administrator who also approves bills). */
  userId: string;
  spendApiToken: string;
}

const DEFAULT_SEED_SIZES = { bills: 60, invoices: 80, transactions: 150 };

const VENDOR_FIXED = [
  'Acme Office Supplies',
  'Northwind Traders',
  'Café Lumière SARL',
  'Müller & Söhne GmbH',
  'Smith, Barney & Co',
  "O'Neil Logistics",
  'Blue Harbor Freight',
  'Granite Peak Legal LLP',
];
const VENDOR_A = [
  'Summit',
  'Pioneer',
  'Redwood',
  'Harbor',
  'Beacon',
  'Cedar',
  'Atlas',
  'Meridian',
  'Silverline',
  'Keystone',
  'Lakeside',
  'Evergreen',
  'Ironwood',
  'Bright',
  'Coastal',
  'Highland',
  'Union',
  'Vertex',
  'Orchard',
  'Pinnacle',
];
const VENDOR_B = [
  'Print',
  'Cloud',
  'Electric',
  'Janitorial',
  'Catering',
  'Consulting',
  'Staffing',
  'Logistics',
  'Software',
  'Security',
  'Telecom',
  'Packaging',
  'Furniture',
  'Marketing',
  'Insurance',
  'Utilities',
  'Courier',
  'Analytics',
];
const VENDOR_C = ['Inc.', 'LLC', 'Co.', 'Group', 'Partners', 'Services', 'Ltd'];
const CUSTOMER_FIXED = [
  'Contoso Ltd',
  'Fabrikam Inc.',
  'Wide World Importers',
  'Tailspin Toys',
  'Litware, Inc.',
  'Adventure Works Cycles',
  'Zürich Präzision AG',
  'Proseware Labs',
];
const CUSTOMER_A = [
  'Alpine',
  'Bayview',
  'Crescent',
  'Delta',
  'Emerald',
  'Falcon',
  'Golden',
  'Horizon',
  'Indigo',
  'Juniper',
  'Kingfisher',
  'Lighthouse',
  'Maple',
  'Northstar',
  'Oakmont',
  'Prairie',
  'Quarry',
  'Riverbend',
  'Sterling',
  'Trillium',
];
const CUSTOMER_B = [
  'Dental',
  'Retail',
  'Architects',
  'Bakery',
  'Fitness',
  'Hotels',
  'Motors',
  'Clinic',
  'Studios',
  'Academy',
  'Brewing',
  'Outfitters',
  'Realty',
  'Foods',
  'Media',
  'Robotics',
];
const CUSTOMER_C = ['Inc.', 'LLC', 'Group', 'Co.', 'Holdings'];
const BILL_WORDS = [
  'Monthly service',
  'Office supplies',
  'Consulting hours',
  'Software subscription',
  'Freight charges',
  'Equipment lease',
  'Cleaning service',
  'Legal retainer',
  'Printing',
  'Catering for all-hands',
  'Cloud hosting',
  'Insurance premium',
];
const INVOICE_WORDS = [
  'Implementation services',
  'Annual license',
  'Support plan',
  'Training workshop',
  'Hardware',
  'Consulting',
  'Maintenance',
  'Custom development',
];
const MERCHANTS = [
  'Delta Air Lines',
  'Uber',
  'Amazon Web Services',
  'Staples',
  'Marriott',
  'Zoom',
  'Slack',
  'Starbucks',
  'Hertz',
  'GitHub',
  'FedEx',
  'Costco',
  'Lufthansa',
  'Chipotle',
  'Adobe',
  'WeWork',
  'Shell',
  'Best Buy',
];
const BUDGETS = [
  { name: 'Marketing', limit: 15_000 },
  { name: 'Travel', limit: 12_000 },
  { name: 'Software', limit: 8_000 },
  { name: 'Office', limit: 3_000 },
  { name: 'Engineering events', limit: 5_000 },
  { name: 'Sales 2023 (retired)', limit: 10_000, retired: true },
];

/** The seed's own fixtures: a missing one is a bug in this file, said plainly. */
function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`seed: no ${what}`);
  return value;
}

function uniqueNames(rng: Prng, fixed: string[], a: string[], b: string[], c: string[], n: number): string[] {
  const names = [...fixed];
  const combos: string[] = [];
  for (const x of a) for (const y of b) for (const z of c) combos.push(`${x} ${y} ${z}`);
  rng.shuffle(combos);
  let i = 0;
  while (names.length < n) {
    names.push(combos[i] ?? `${combos[i % combos.length]} ${Math.floor(i / combos.length) + 1}`);
    i++;
  }
  return names.slice(0, n);
}

const round = (n: number) => Math.round(n * 100) / 100;
const secret = (bytes = 18) => randomBytes(bytes).toString('base64url');

/** Adds the demo organisation to the model and returns its credentials. */
export function seedDemoOrg(model: SandboxModel, opts: SeedOptions = {}): DemoCredentials {
  const seed = opts.seed ?? 'billbridge-demo';
  const rng = new Prng(`seed:${seed}`);
  const ids = model.ids;
  const today = model.today();
  const nowMs = model.clock.now();
  // 0 is how the config says "not set" (SANDBOX_BILLS, SANDBOX_INVOICES), so it takes the default size too.
  const billCount = opts.bills === undefined || opts.bills === 0 ? DEFAULT_SEED_SIZES.bills : opts.bills;
  const invoiceCount = opts.invoices === undefined || opts.invoices === 0 ? DEFAULT_SEED_SIZES.invoices : opts.invoices;
  const txCount = opts.transactions ?? DEFAULT_SEED_SIZES.transactions;

  const org = model.addOrg(newOrg(ids.next(ID_PREFIX.org), 'Northwind Demo Co.'));
  const created = (date: string, k: number) => {
    // Creation instants are never in the future, and distinct so createdTime sorts are total.
    const ms = Math.min(Date.parse(`${date < today ? date : addDays(today, -1)}T09:00:00.000Z`) + (k % 36_000) * 1000, nowMs - 1000);
    return new Date(ms).toISOString();
  };

  // Users: the demo admin (signs in, approves), two approvers, an accountant, a clerk.
  const people: Array<[string, string, SandboxUser['role']]> = [
    ['Dana', 'Whitfield', 'ADMINISTRATOR'],
    ['Priya', 'Raman', 'APPROVER'],
    ['Marcus', 'Lee', 'APPROVER'],
    ['Elena', 'García', 'ACCOUNTANT'],
    ['Tom', 'Becker', 'CLERK'],
  ];
  const users = people.map(([firstName, lastName, role], i) =>
    org.users.put({
      id: ids.next(ID_PREFIX.user),
      email:
        i === 0
          ? (opts.credentials?.username ?? 'demo@billbridge.example')
          : `${firstName.toLowerCase()}.${lastName
              .toLowerCase()
              .normalize('NFD')
              .replace(/[^a-z]/g, '')}@northwind-demo.example`,
      password: i === 0 ? (opts.credentials?.password ?? secret()) : secret(),
      firstName,
      lastName,
      role,
    }),
  );
  const admin = required(users[0], 'admin user');
  const approverPool = [admin, required(users[1], 'second approver'), required(users[2], 'third approver')];

  // Vendors and customers.
  const vendorNames = uniqueNames(rng, VENDOR_FIXED, VENDOR_A, VENDOR_B, VENDOR_C, Math.max(24, Math.ceil(billCount / 40)));
  const vendors: Vendor[] = vendorNames.map((name, i) => {
    const since = addDays(today, -rng.int(120, 900));
    return org.vendors.put({
      id: ids.next(ID_PREFIX.vendor),
      archived: i > 8 && rng.chance(0.05),
      name,
      shortName: name.split(' ')[0],
      accountNumber: `V-${String(1000 + i)}`,
      accountType: 'BUSINESS',
      email: `ap@${
        name
          .toLowerCase()
          .normalize('NFD')
          .replace(/[^a-z]+/g, '')
          .slice(0, 16) || 'vendor'
      }.example`,
      phone: `555-01${String(i % 100).padStart(2, '0')}`,
      address: {
        line1: `${rng.int(1, 999)} Market St`,
        city: rng.pick(['Seattle', 'Austin', 'Denver', 'Boston', 'Chicago']),
        stateOrProvince: rng.pick(['WA', 'TX', 'CO', 'MA', 'IL']),
        zipOrPostalCode: String(rng.int(10000, 99999)),
        country: 'US',
        countryName: 'United States',
      },
      paymentInformation: { payeeName: name, payByType: rng.pick(['ACH', 'CHECK', 'VIRTUAL_CARD']) },
      additionalInfo: { track1099: rng.chance(0.2), leadTimeInDays: rng.int(1, 5), combinePayments: rng.chance(0.5) },
      billCurrency: 'USD',
      balance: { amount: 0, lastUpdatedDate: new Date(nowMs).toISOString() },
      networkStatus: rng.pick(['CONNECTED', 'NOT_CONNECTED', 'NOT_CONNECTED', 'PENDING']),
      createdTime: created(since, i),
      updatedTime: created(since, i),
    });
  });
  const customerNames = uniqueNames(rng, CUSTOMER_FIXED, CUSTOMER_A, CUSTOMER_B, CUSTOMER_C, Math.max(18, Math.ceil(invoiceCount / 50)));
  const customers: Customer[] = customerNames.map((name, i) => {
    const since = addDays(today, -rng.int(120, 900));
    return org.customers.put({
      id: ids.next(ID_PREFIX.customer),
      archived: i > 8 && rng.chance(0.04),
      name,
      companyName: name,
      email: `billing@${
        name
          .toLowerCase()
          .normalize('NFD')
          .replace(/[^a-z]+/g, '')
          .slice(0, 16) || 'customer'
      }.example`,
      phone: `555-02${String(i % 100).padStart(2, '0')}`,
      contact: {
        firstName: rng.pick(['Alex', 'Sam', 'Jordan', 'Riley', 'Chris', 'Morgan']),
        lastName: rng.pick(['Nguyen', 'Patel', 'Smith', 'Kowalski', 'Okafor', 'Larsen']),
      },
      accountType: 'BUSINESS',
      accountNumber: `C-${String(2000 + i)}`,
      invoiceCurrency: 'USD',
      balance: { amount: 0 },
      createdTime: created(since, i),
      updatedTime: created(since, i),
    });
  });
  const liveVendors = vendors.filter((v) => !v.archived);
  const liveCustomers = customers.filter((c) => !c.archived);
  const coa = ids.next(ID_PREFIX.chartOfAccount);
  const bankAccount = ids.next(ID_PREFIX.bankAccount);

  // Bills across overdue / due this week / later, unpaid / scheduled / paid, some archived, with approvers.
  type BillKind = 'overdue' | 'thisWeek' | 'later' | 'scheduled' | 'paid' | 'archived';
  const kinds: Record<BillKind, number> = { overdue: 15, thisWeek: 15, later: 25, scheduled: 10, paid: 30, archived: 5 };
  const paidStatuses = ['CLEARED', 'CLEARED', 'CLEARED', 'DELIVERED', 'SENT', 'PROCESSED', 'FUNDING_STARTED'] as const;
  for (let i = 0; i < billCount; i++) {
    // The first rows cover every kind, so even a tiny seed shows each state.
    const kind: BillKind = (['overdue', 'thisWeek', 'later', 'scheduled', 'paid', 'archived'] as const)[i] ?? rng.weighted(kinds);
    const vendor = rng.pick(liveVendors);
    const dueDate =
      kind === 'overdue'
        ? addDays(today, -rng.int(1, 45))
        : kind === 'thisWeek'
          ? addDays(today, rng.int(0, 6))
          : kind === 'later'
            ? addDays(today, rng.int(7, 75))
            : kind === 'scheduled'
              ? addDays(today, rng.int(1, 21))
              : kind === 'paid'
                ? addDays(today, -rng.int(-10, 90))
                : addDays(today, -rng.int(10, 200));
    const amount = rng.money(45, 24_000);
    const invoiceDate = addDays(dueDate, -30) < today ? addDays(dueDate, -30) : addDays(today, -1);
    const id = ids.next(ID_PREFIX.bill);
    const lines = rng.int(1, 3);
    const billLineItems: BillLineItem[] = [];
    let rest = amount;
    for (let l = 0; l < lines; l++) {
      const part = l === lines - 1 ? round(rest) : round(amount / lines);
      rest = round(rest - part);
      billLineItems.push({
        id: ids.next(ID_PREFIX.billLineItem),
        amount: part,
        quantity: 1,
        price: part,
        description: rng.pick(BILL_WORDS),
        classifications: { chartOfAccountId: coa },
      });
    }
    const paid = kind === 'paid';
    const scheduled = kind === 'scheduled';
    let approvalStatus: Bill['approvalStatus'] = 'UNASSIGNED';
    let approvers: Approver[] = [];
    if (!paid && kind !== 'archived' && rng.chance(0.45)) {
      const chain = rng.shuffle([...approverPool]).slice(0, rng.int(1, 3));
      const approvedUpTo = rng.int(0, chain.length - 1);
      const denied = rng.chance(0.06);
      approvers = chain.map((u, k) => ({
        userId: u.id,
        status: k < approvedUpTo ? 'APPROVED' : denied && k === approvedUpTo ? 'DENIED' : 'WAITING',
        approverOrder: k + 1,
        statusChangedTime: k < approvedUpTo ? created(invoiceDate, i + k) : undefined,
      }));
      approvalStatus = denied ? 'DENIED' : 'ASSIGNED';
    } else if (paid || scheduled) {
      approvalStatus = rng.chance(0.5) ? 'APPROVED' : 'UNASSIGNED';
      if (approvalStatus === 'APPROVED')
        approvers = [
          { userId: rng.pick(approverPool).id, status: 'APPROVED', approverOrder: 1, statusChangedTime: created(invoiceDate, i) },
        ];
    }
    const bill: Bill = {
      id,
      archived: kind === 'archived',
      vendorId: vendor.id,
      vendorName: vendor.name,
      amount,
      paidAmount: paid ? amount : 0,
      dueAmount: paid ? 0 : amount,
      scheduledAmount: scheduled ? amount : 0,
      creditAmount: 0,
      fundingAmount: amount,
      exchangeRate: 1,
      description: required(billLineItems[0], 'bill line item').description,
      dueDate,
      invoice: { invoiceNumber: `${vendor.shortName?.slice(0, 3).toUpperCase() ?? 'INV'}-${rng.int(10000, 99999)}`, invoiceDate },
      billLineItems,
      payFromChartOfAccountId: coa,
      paymentStatus: paid ? 'PAID' : scheduled ? 'SCHEDULED' : 'UNPAID',
      approvalStatus,
      approvers,
      classifications: { chartOfAccountId: coa },
      purchaseOrderNumber: rng.chance(0.3) ? `PO-${rng.int(1000, 9999)}` : undefined,
      createdTime: created(invoiceDate, i),
      updatedTime: created(invoiceDate, i),
    };
    org.bills.put(bill);
    if (!paid)
      vendor.balance = {
        amount: round((vendor.balance?.amount ?? 0) + (bill.archived ? 0 : amount)),
        lastUpdatedDate: vendor.balance?.lastUpdatedDate,
      };
    if (paid || scheduled) {
      const single = scheduled ? 'SCHEDULED' : rng.pick(paidStatuses);
      const processDate = scheduled
        ? addDays(dueDate, -rng.int(0, 2)) < today
          ? today
          : addDays(dueDate, -rng.int(0, 2))
        : addDays(dueDate < today ? dueDate : today, -rng.int(0, 3));
      org.payments.put(
        paymentFor(
          ids.next(ID_PREFIX.payment),
          bill,
          vendor.name,
          single,
          processDate,
          bankAccount,
          admin.id,
          created(processDate < today ? processDate : addDays(today, -1), i),
          rng,
        ),
      );
    }
  }
  // A few payments that did not go through, for the varied singleStatus a finance team sees.
  const unpaid = org.bills.all().filter((b) => b.paymentStatus === 'UNPAID' && !b.archived);
  for (const [k, single] of (['CANCELED', 'VOIDED', 'DISBURSEMENT_FAILED_ACTION_NEEDED'] as const).entries()) {
    const bill = unpaid[k * 3];
    if (!bill) break;
    const processDate = addDays(today, -rng.int(3, 20));
    org.payments.put(
      paymentFor(
        ids.next(ID_PREFIX.payment),
        bill,
        bill.vendorName ?? '',
        single,
        processDate,
        bankAccount,
        admin.id,
        created(processDate, k),
        rng,
      ),
    );
  }

  // Invoices: open, overdue, partially paid, paid, archived; numbers 1001, 1002, ...
  type InvoiceKind = 'open' | 'overdue' | 'partial' | 'paid' | 'archived';
  const invoiceKinds: Record<InvoiceKind, number> = { open: 35, overdue: 20, partial: 12, paid: 25, archived: 8 };
  for (let i = 0; i < invoiceCount; i++) {
    const kind: InvoiceKind = (['open', 'overdue', 'partial', 'paid', 'archived'] as const)[i] ?? rng.weighted(invoiceKinds);
    const customer = rng.pick(liveCustomers);
    const dueDate =
      kind === 'open'
        ? addDays(today, rng.int(0, 45))
        : kind === 'overdue'
          ? addDays(today, -rng.int(1, 90))
          : kind === 'partial'
            ? addDays(today, rng.int(-30, 30))
            : kind === 'paid'
              ? addDays(today, -rng.int(-15, 120))
              : addDays(today, -rng.int(5, 150));
    const invoiceDate = addDays(dueDate, -30) < today ? addDays(dueDate, -30) : addDays(today, -1);
    const totalAmount = rng.money(150, 48_000);
    const id = ids.next(ID_PREFIX.invoice);
    const paidPart = kind === 'paid' ? totalAmount : kind === 'partial' ? round((totalAmount * rng.int(20, 70)) / 100) : 0;
    const invoice: Invoice = {
      id,
      archived: kind === 'archived',
      invoiceNumber: String(1001 + i),
      invoiceDate,
      dueDate,
      customerId: customer.id,
      totalAmount,
      dueAmount: round(totalAmount - paidPart),
      scheduledAmount: 0,
      creditAmount: 0,
      status: kind === 'paid' ? 'PAID' : kind === 'partial' ? 'PARTIAL_PAYMENT' : 'OPEN',
      exchangeRate: 1,
      invoiceLineItems: [
        {
          id: ids.next(ID_PREFIX.invoiceLineItem),
          description: rng.pick(INVOICE_WORDS),
          price: totalAmount,
          quantity: 1,
          classifications: {},
        },
      ],
      payToChartOfAccountId: coa,
      payments: [],
      classifications: {},
      salesTaxTotal: 0,
      salesTaxPercentage: 0,
      enableCardPayment: rng.chance(0.5),
      createdTime: created(invoiceDate, i),
      updatedTime: created(invoiceDate, i),
    };
    if (paidPart > 0) {
      const paymentDate = addDays(invoiceDate, rng.int(3, 40)) < today ? addDays(invoiceDate, rng.int(3, 40)) : addDays(today, -1);
      const rp: ReceivablePayment = {
        id: ids.next(ID_PREFIX.receivedPayment),
        customerId: customer.id,
        amount: paidPart,
        invoicePayments: [{ invoiceId: id, amount: paidPart, paymentDate }],
        description: `Payment for invoice ${invoice.invoiceNumber}`,
        paymentDate,
        unappliedAmount: 0,
        receivablesType: rng.pick(['CREDIT_CARD', 'WALLET']),
        status: 'PAID',
        referenceNumber: `REF-${rng.int(100000, 999999)}`,
        onlinePayment: rng.chance(0.6),
        createdTime: created(paymentDate, i),
        updatedTime: created(paymentDate, i),
      };
      org.receivablePayments.put(rp);
      invoice.payments = [{ id: rp.id, amount: paidPart, status: 'PAID', date: paymentDate }];
    }
    org.invoices.put(invoice);
    if (!invoice.archived) customer.balance = { amount: round((customer.balance?.amount ?? 0) + invoice.dueAmount) };
  }

  // Spend & Expense: budgets, card transactions (some missing receipts), reimbursements.
  const spendUsers = users.map((u, i) => ({
    id: Buffer.from(`User:${7001 + i}`).toString('base64'),
    uuid: ids.uuid(),
    name: `${u.firstName} ${u.lastName}`,
  }));
  const monthStart = `${today.slice(0, 7)}-01`;
  const monthEnd = addDays(`${addDays(monthStart, 32).slice(0, 7)}-01`, -1);
  const budgets: Budget[] = BUDGETS.map((b, i) =>
    org.spend.budgets.put({
      id: Buffer.from(`Budget:${3001 + i}`).toString('base64'),
      uuid: ids.uuid(),
      name: b.name,
      description: `${b.name} spend`,
      retired: !!b.retired,
      startDate: addDays(today, -400),
      recurringInterval: 'MONTHLY',
      recurringLimit: b.limit,
      receiptRequired: true,
      currentPeriod: {
        startDate: monthStart,
        endDate: monthEnd,
        limit: b.limit,
        overspendBuffer: 0,
        assigned: b.limit,
        spent: { cleared: 0, pending: 0, total: 0 },
      },
    }),
  );
  const liveBudgets = budgets.filter((b) => !b.retired);
  for (let i = 0; i < txCount; i++) {
    const budget = rng.pick(liveBudgets);
    const user = rng.pick(spendUsers);
    const amount = rng.money(4, 2_500);
    const type = rng.weighted({ CLEAR: 85, AUTHORIZATION: 12, DECLINE: 3 });
    const occurred = new Date(nowMs - rng.int(60, 45 * 86_400) * 1000).toISOString();
    const receiptRequired = amount > 75 && type !== 'DECLINE';
    const receiptStatus = receiptRequired ? (rng.chance(0.3) ? 'MISSING' : 'ATTACHED') : rng.chance(0.5) ? 'ATTACHED' : 'NOT_ATTACHED';
    const merchant = rng.pick(MERCHANTS);
    const tx: SpendTransaction = {
      id: Buffer.from(`Transaction:${100001 + i}`).toString('base64'),
      uuid: ids.uuid(),
      transactionType: type,
      isCredit: false,
      complete: type === 'CLEAR',
      amount,
      transactedAmount: amount,
      fees: 0,
      merchantName: merchant,
      rawMerchantName: merchant.toUpperCase(),
      merchantCategoryCode: String(rng.int(4000, 7999)),
      occurredTime: occurred,
      authorizedTime: occurred,
      updatedTime: occurred,
      userId: user.id,
      userUuid: user.uuid,
      userName: user.name,
      budgetId: budget.id,
      budgetUuid: budget.uuid,
      budgetName: budget.name,
      cardId: Buffer.from(`Card:${5001 + spendUsers.indexOf(user)}`).toString('base64'),
      cardLastFour: String(1000 + spendUsers.indexOf(user) * 1111).slice(-4),
      cardType: 'VIRTUAL',
      receiptRequired,
      receiptStatus,
      receipts: receiptStatus === 'ATTACHED' ? [{ filename: `receipt-${i}.jpg`, uuid: ids.uuid() }] : [],
      reviewRequired: amount > 500,
      reviewers:
        amount > 500
          ? [
              {
                approverType: 'BUDGET_OWNER',
                status: rng.pick(['WAITING', 'APPROVED']),
                userId: required(spendUsers[1], 'budget owner').id,
                userName: required(spendUsers[1], 'budget owner').name,
              },
            ]
          : [],
      accountingIntegrationTransactions: [{ syncStatus: rng.pick(['SYNCED', 'NOT_SYNCED', 'PENDING']) }],
      declineReason: type === 'DECLINE' ? 'INSUFFICIENT_FUNDS' : undefined,
    };
    org.spend.transactions.put(tx);
    const spent = budget.currentPeriod?.spent;
    if (spent && type !== 'DECLINE' && occurred.slice(0, 10) >= monthStart) {
      if (type === 'CLEAR') spent.cleared = round(spent.cleared + amount);
      else spent.pending = round(spent.pending + amount);
      spent.total = round(spent.cleared + spent.pending);
    }
  }
  const reimbursementStatuses = [
    'AWAITING_TIER2_APPROVAL',
    'APPROVED',
    'READY_TO_PAY',
    'PAID',
    'PAID',
    'PAYMENT_FAILED',
    'APPROVAL_UNDONE',
  ];
  for (let i = 0; i < 14; i++) {
    const user = rng.pick(spendUsers);
    const status = required(reimbursementStatuses[i % reimbursementStatuses.length], 'reimbursement status');
    const submitted = new Date(nowMs - rng.int(1, 30) * 86_400_000).toISOString();
    const mileage = rng.chance(0.3);
    const r: Reimbursement = {
      id: Buffer.from(`Reimbursement:${9001 + i}`).toString('base64'),
      uuid: ids.uuid(),
      amount: mileage ? round(rng.int(20, 400) * 0.67) : rng.money(12, 900),
      merchantName: mileage ? undefined : rng.pick(MERCHANTS),
      note: mileage ? 'Client visit' : 'Out-of-pocket purchase',
      type: mileage ? 'MILEAGE' : 'OUT_OF_POCKET',
      fulfillmentType: rng.pick(['ACH', 'PAYROLL']),
      status,
      statusHistory: [{ actorId: user.id, actorRole: 'MEMBER', occurredTime: submitted, status: 'SUBMITTED' }],
      submittedTime: submitted,
      occurredDate: submitted.slice(0, 10),
      retired: false,
      budgetId: rng.pick(liveBudgets).id,
      userId: user.id,
      receipts: mileage ? [] : [{ filename: `reimb-${i}.pdf`, uuid: ids.uuid() }],
    };
    org.spend.reimbursements.put(r);
  }

  // Credentials: fresh random secrets unless fixed ones were asked for.
  const devKey = opts.credentials?.devKey ?? secret(24);
  const spendApiToken = opts.credentials?.spendApiToken ?? secret(24);
  model.devKeys.set(devKey, { active: true });
  model.spendTokens.set(spendApiToken, org.id);
  return { devKey, username: admin.email, password: admin.password, orgId: org.id, userId: admin.id, spendApiToken };
}

function paymentFor(
  id: string,
  bill: Bill,
  vendorName: string,
  single: string,
  processDate: string,
  bankAccount: string,
  createdBy: string,
  createdTime: string,
  rng: Prng,
): Payment {
  const failed = single === 'CANCELED' || single === 'VOIDED' || single.includes('FAILED');
  return {
    id,
    vendorId: bill.vendorId,
    vendorName,
    billId: bill.id,
    billPayments: [{ id: `${id}bp`, billId: bill.id, amount: bill.amount }],
    amount: bill.amount,
    description: `Payment for ${bill.invoice?.invoiceNumber ?? bill.id}`,
    processDate,
    fundingAccount: { type: 'BANK_ACCOUNT', id: bankAccount },
    fundingAmount: bill.amount,
    exchangeRate: 1,
    transactionNumber: `T${rng.int(10_000_000, 99_999_999)}`,
    confirmationNumber: `P${rng.int(100_000_000, 999_999_999)}`,
    onlinePayment: true,
    status: single === 'SCHEDULED' ? 'SCHEDULED' : failed ? 'CANCELLED' : 'PAID',
    singleStatus: single,
    disbursementStatus: single === 'CLEARED' || single === 'DELIVERED' ? 'DONE' : single.includes('FAILED') ? 'FAILED' : undefined,
    disbursementType: 'ACH',
    cancelRequestSubmitted: single === 'CANCELED',
    createdBy,
    createdTime,
    updatedTime: createdTime,
  };
}
