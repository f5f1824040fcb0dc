// The naive baseline of the economy scenario: a client that answers the same questions straight against BILL with
// undici — a login per command, no cache, no index, no shared loads. BILL cannot filter invoices or bills by number,
// so it pages until it finds the number; names come from listing the vendors or customers.
import { request } from 'undici';
import { filterTerm } from '../src/bill/filters.js';
import { field, list, text } from './json.js';

export interface NaiveCounts {
  commands: number;
  calls: number;
  logins: number;
  byRoute: Record<string, number>;
  failures: number;
}

interface Creds {
  devKey: string;
  username: string;
  password: string;
  orgId: string;
}

const BILL_ID = /^00n[A-Za-z0-9]{5,61}$/;

export class NaiveClient {
  readonly counts: NaiveCounts = { commands: 0, calls: 0, logins: 0, byRoute: {}, failures: 0 };

  constructor(
    private readonly baseUrl: string,
    private readonly creds: Creds,
    private readonly today: () => string,
  ) {}

  private async call(
    method: 'GET' | 'POST',
    route: string,
    path: string,
    opts: { sessionId?: string; query?: Record<string, string | number | undefined>; body?: unknown } = {},
  ): Promise<unknown> {
    this.counts.calls++;
    this.counts.byRoute[route] = (this.counts.byRoute[route] ?? 0) + 1;
    const url = new URL(`${this.baseUrl}${path}`);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json' };
    if (opts.sessionId) {
      headers.devKey = this.creds.devKey;
      headers.sessionId = opts.sessionId;
    }
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const res = await request(url, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
    const json: unknown = await res.body.json().catch(() => undefined);
    if (res.statusCode >= 400) throw new Error(`${route} answered ${res.statusCode}: ${JSON.stringify(json).slice(0, 200)}`);
    return json;
  }

  private async login(): Promise<string> {
    this.counts.logins++;
    const res = await this.call('POST', 'POST /v3/login', '/v3/login', {
      body: { username: this.creds.username, password: this.creds.password, organizationId: this.creds.orgId, devKey: this.creds.devKey },
    });
    const sessionId = text(res, 'sessionId');
    if (!sessionId) throw new Error('POST /v3/login answered without a sessionId');
    return sessionId;
  }

  /** Every page of a list (100 a page). */
  private async all(sessionId: string, path: string, filters: string[] = [], sort?: string): Promise<unknown[]> {
    const out: unknown[] = [];
    let page: string | undefined;
    for (;;) {
      const res = await this.call('GET', `GET ${path}`, path, {
        sessionId,
        query: { max: 100, page, sort, filters: filters.length ? filters.join(',') : undefined },
      });
      out.push(...list(field(res, 'results')));
      page = text(res, 'nextPage') || undefined;
      if (!page) return out;
    }
  }

  /** Pages until `match` finds a record (no filter can find it for us). */
  private async scan(sessionId: string, path: string, match: (r: unknown) => boolean): Promise<unknown> {
    let page: string | undefined;
    for (;;) {
      const res = await this.call('GET', `GET ${path}`, path, { sessionId, query: { max: 100, page } });
      const hit = list(field(res, 'results')).find(match);
      if (hit) return hit;
      page = text(res, 'nextPage') || undefined;
      if (!page) return undefined;
    }
  }

  /** Answers one command line the way the bot would be asked it. */
  async answer(text: string): Promise<void> {
    this.counts.commands++;
    const t = text.trim();
    const lower = t.toLowerCase();
    try {
      if (lower === 'help' || lower === 'status') return;
      const sessionId = await this.login();
      const today = this.today();
      const unpaid = [filterTerm('paymentStatus', 'ne', 'PAID'), filterTerm('archived', 'eq', false)];
      const overdue = () => this.all(sessionId, '/v3/bills', [filterTerm('dueDate', 'lt', today), ...unpaid], 'dueDate:asc');
      const vendors = () => this.all(sessionId, '/v3/vendors');
      let m: RegExpExecArray | null;
      if ((m = /^bills due(?:\s+(\d+))?$/.exec(lower))) {
        const to = addDays(today, Number(m[1] ?? 7));
        await this.all(
          sessionId,
          '/v3/bills',
          [filterTerm('dueDate', 'gte', today), filterTerm('dueDate', 'lte', to), ...unpaid],
          'dueDate:asc',
        );
        await overdue();
        await vendors();
      } else if (lower === 'bills overdue') {
        await overdue();
        await vendors();
      } else if (lower === 'invoices overdue') {
        await this.all(sessionId, '/v3/invoices');
        await this.all(sessionId, '/v3/customers');
      } else if ((m = /^invoice\s+(.+)$/i.exec(t))) {
        const number = (m[1] ?? '').trim();
        const inv = await this.scan(sessionId, '/v3/invoices', (r) => field(r, 'invoiceNumber') === number);
        if (inv) await this.call('GET', 'GET /v3/customers/{id}', `/v3/customers/${String(field(inv, 'customerId'))}`, { sessionId });
      } else if ((m = /^bill\s+(.+)$/i.exec(t))) {
        const key = (m[1] ?? '').trim();
        const bill = BILL_ID.test(key)
          ? await this.call('GET', 'GET /v3/bills/{id}', `/v3/bills/${key}`, { sessionId })
          : await this.scan(sessionId, '/v3/bills', (r) => field(field(r, 'invoice'), 'invoiceNumber') === key);
        if (bill) await this.call('GET', 'GET /v3/vendors/{id}', `/v3/vendors/${String(field(bill, 'vendorId'))}`, { sessionId });
      } else if ((m = /^vendor\s+(.+)$/i.exec(t))) {
        const found = await this.all(sessionId, '/v3/vendors', [
          filterTerm('name', 'sw', (m[1] ?? '').trim()),
          filterTerm('archived', 'eq', false),
        ]);
        if (found.length) await this.all(sessionId, '/v3/bills', [filterTerm('vendorId', 'in', ids(found.slice(0, 100))), ...unpaid]);
      } else if ((m = /^customer\s+(.+)$/i.exec(t))) {
        const found = await this.all(sessionId, '/v3/customers', [
          filterTerm('name', 'sw', (m[1] ?? '').trim()),
          filterTerm('archived', 'eq', false),
        ]);
        if (found.length)
          await this.all(sessionId, '/v3/invoices', [
            filterTerm('customerId', 'in', ids(found.slice(0, 100))),
            filterTerm('archived', 'eq', false),
          ]);
      } else if ((m = /^payments(?:\s+(\d+))?$/.exec(lower))) {
        await this.call('GET', 'GET /v3/payments', '/v3/payments', {
          sessionId,
          query: { max: Number(m[1] ?? 10), sort: 'processDate:desc' },
        });
        await vendors();
      } else {
        throw new Error(`the naive client does not know "${t}"`);
      }
    } catch (err) {
      this.counts.failures++;
      throw err;
    }
  }
}

/** The ids of BILL records, with a clear error for one that has none. */
function ids(records: unknown[]): string[] {
  return records.map((r) => {
    const id = text(r, 'id');
    if (id === undefined) throw new Error('BILL listed a record without an id');
    return id;
  });
}

function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00.000Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}
