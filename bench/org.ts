// What the bench knows about the sandbox organisation (numbers, ids, names to ask about), how it reads the bot's
// answers (answered, "BILL is busy", refused, failed), and how it waits for the bot's indexes.
import type { SandboxStats } from '../src/sandbox/gate.js';
import type { Reply } from './connector.js';
import type { BotClient } from './load.js';
import { commandActivity, person, place } from './load.js';
import type { Child } from './processes.js';

export interface Catalog {
  orgId: string;
  invoiceNumbers: string[];
  bills: Array<{ id: string; number: string }>;
  vendors: string[];
  customers: string[];
}

export type Outcome = 'answered' | 'busy' | 'userRate' | 'indexing' | 'failed' | 'noReply';

/** Reads a reply card's summary (src/cards/errorCards.ts and the index card word them). */
export function outcomeOf(reply: Reply | undefined): Outcome {
  if (!reply) return 'noReply';
  const s = reply.summary;
  if (s.startsWith('BILL is busy')) return 'busy';
  if (s.startsWith('Too many commands')) return 'userRate';
  if (s.startsWith('Indexing this organisation')) return 'indexing';
  if (
    s.startsWith('Something went wrong') ||
    s.startsWith('BILL hourly limit') ||
    s.startsWith('BILL sign-in limit') ||
    s.startsWith('billbridge is temporarily unavailable') ||
    s.startsWith("BILL didn't answer") ||
    s.startsWith('BILL sign-in failed') ||
    s.startsWith('Not found in BILL')
  ) {
    return 'failed';
  }
  return 'answered';
}

export function tally(outcomes: Outcome[]): Record<Outcome, number> {
  const out: Record<Outcome, number> = { answered: 0, busy: 0, userRate: 0, indexing: 0, failed: 0, noReply: 0 };
  for (const o of outcomes) out[o]++;
  return out;
}

/** Bill numbers that belong to one bill only (a shared number answers with a list to pick from). */
export function uniqueBillNumbers(catalog: Catalog): Array<{ id: string; number: string }> {
  const seen = new Map<string, number>();
  for (const b of catalog.bills) seen.set(b.number, (seen.get(b.number) ?? 0) + 1);
  return catalog.bills.filter((b) => b.number && seen.get(b.number) === 1);
}

export interface BotStats {
  cacheBounds: { maxEntries: number };
  /** The answers kept beside the mirror (payments, Spend & Expense, lists asked while the mirror is built). */
  cache: { hits: number; misses: number; entries: number; hitRatio: number };
  budgets: Array<{ budget: string; granted: number; rejected: Record<string, number>; throttles: Record<string, number> }>;
  invoiceIndex?: { records: number; complete: boolean };
  billIndex?: { records: number; complete: boolean };
  vendorIndex?: { records: number; complete: boolean };
  customerIndex?: { records: number; complete: boolean };
  /** Record kinds BILL webhooks keep current for the org (lists of these live CACHE_TTL_PUSHED_S). */
  pushFed?: string[];
  loginsLastHour: number;
  memory: NodeJS.MemoryUsage;
  peakRss?: number;
  rss: number;
}

/** What the sandbox counts (GET /__sandbox/stats, or the child's `stats` call). */
export type { SandboxStats };

/** Upstream calls the sandbox answered (logins included), from its per-route counts. */
export function billCalls(stats: SandboxStats): number {
  return Object.values(stats.requestsByPath).reduce((a, b) => a + b, 0);
}

/**
 * Asks for one invoice and one bill by number (and, with `parties`, one vendor and one customer by name) so the bot
 * builds its replicas, then waits until the bot says they are complete (builds run in the background after the first
 * answer).
 */
export async function warmIndexes(
  bot: Child,
  client: BotClient,
  serviceUrl: string,
  catalog: Catalog,
  timeoutMs = 180_000,
  parties = false,
): Promise<BotStats> {
  const bill = uniqueBillNumbers(catalog)[0];
  const texts = [
    `invoice ${catalog.invoiceNumbers[0]}`,
    ...(bill ? [`bill ${bill.number}`] : []),
    ...(parties ? [`vendor ${catalog.vendors[0]}`, `customer ${catalog.customers[0]}`] : []),
  ];
  await Promise.all(
    texts.map((text, i) =>
      client.post(commandActivity({ text, who: person(900_000 + i), where: place(0, 0) }, `warm-${Date.now()}-${i}`, serviceUrl).activity),
    ),
  );
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const stats = await bot.call<BotStats>('stats');
    const partiesDone = !parties || (stats.vendorIndex?.complete && stats.customerIndex?.complete);
    if (stats.invoiceIndex?.complete && (!bill || stats.billIndex?.complete) && partiesDone) return stats;
    if (Date.now() > deadline)
      throw new Error(
        `the bot's indexes were not complete after ${timeoutMs} ms: ${JSON.stringify({ invoices: stats.invoiceIndex, bills: stats.billIndex, vendors: stats.vendorIndex, customers: stats.customerIndex })}`,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
}
