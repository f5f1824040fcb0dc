// When lists may be kept longer because BILL webhooks feed them: only while billbridge's own subscription covers the
// record kind and BILL said it is enabled (or one of its events arrived) within the check interval; a failed check
// means polling as usual, and the next check waits a minute.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import type { BillGateway } from '../../src/bill/gateway.js';
import type { Subscription } from '../../src/bill/types.js';
import type { WebhookKeyInfo } from '../../src/notify/keys.js';
import { PushFeed } from '../../src/notify/pushFeed.js';

const ORG = '00801PUSHFEEDORG0001';
const URL_ = 'https://bot.example.com/api/bill/webhooks';
const CHECK_MS = 900_000;

function setup(opts: { events?: string[]; enabled?: boolean; url?: string; fail?: boolean } = {}) {
  const clock = new ManualClock(Date.parse('2026-11-22T10:00:00Z'));
  const gets: string[] = [];
  let fail = opts.fail ?? false;
  let enabled = opts.enabled ?? true;
  const bill = {
    org: () => ({
      subscriptions: {
        get: async (id: string): Promise<Subscription> => {
          gets.push(id);
          if (fail) throw new Error('BILL did not answer');
          return {
            id,
            name: 'billbridge',
            organizationId: ORG,
            status: { enabled },
            events: [],
            notificationUrl: `${opts.url ?? URL_}/`,
            createdTime: '',
            updatedTime: '',
          };
        },
      },
    }),
  } as unknown as BillGateway;
  const mine: WebhookKeyInfo[] = [
    {
      subscriptionId: 'sub-1',
      orgId: ORG,
      name: 'billbridge',
      notificationUrl: URL_,
      events: opts.events ?? ['bill.updated', 'payment.updated'],
      sealed: true,
    },
  ];
  const feed = new PushFeed({
    bill,
    clock,
    log: createLogger({ level: 'silent', secrets: new SecretRegistry() }),
    subscriptions: async () => mine,
    checkMs: CHECK_MS,
  });
  return { clock, feed, gets, setFail: (f: boolean) => void (fail = f), setEnabled: (e: boolean) => void (enabled = e) };
}

describe('PushFeed', () => {
  it("feeds only the kinds the subscription's events cover, once BILL said it is enabled (trailing slashes aside)", async () => {
    const { feed, gets } = setup();
    expect(feed.fed(ORG, 'bill')).toBe(false);
    await feed.refresh(ORG);
    expect(gets).toEqual(['sub-1']);
    expect(feed.fed(ORG, 'bill')).toBe(true);
    expect(feed.fed(ORG, 'payment')).toBe(true);
    expect(feed.fed(ORG, 'invoice')).toBe(false);
    expect(feed.fed('00801OTHERORG0000001', 'bill')).toBe(false);
  });

  it('never feeds spend: its events cover transactions and reimbursements, not budgets or cards', async () => {
    const { feed } = setup({ events: ['bill.updated', 'spend.transaction.updated', 'spend.reimbursement.updated'] });
    await feed.refresh(ORG);
    expect(feed.fed(ORG, 'bill')).toBe(true);
    expect(feed.fed(ORG, 'spend')).toBe(false);
  });

  it('a disabled subscription, or one that delivers elsewhere, feeds nothing', async () => {
    const off = setup({ enabled: false });
    await off.feed.refresh(ORG);
    expect(off.feed.fed(ORG, 'bill')).toBe(false);
    const elsewhere = setup({ url: 'https://other.example.com/api/bill/webhooks' });
    await elsewhere.feed.refresh(ORG);
    expect(elsewhere.feed.fed(ORG, 'bill')).toBe(false);
  });

  it('a failed check means polling, and the next check waits a minute; an accepted event vouches meanwhile', async () => {
    const { clock, feed, gets, setFail } = setup({ fail: true });
    await feed.refresh(ORG);
    expect(feed.fed(ORG, 'bill')).toBe(false);
    const asked = gets.length;
    const settled = () => new Promise((resolve) => setImmediate(resolve));
    clock.advance(30_000);
    feed.fed(ORG, 'bill');
    await settled();
    // Within the minute after a failed check, asking does not start another.
    expect(gets.length).toBe(asked);
    clock.advance(31_000);
    feed.fed(ORG, 'bill');
    await settled();
    expect(gets.length).toBe(asked + 1);
    // An event signed by billbridge's subscription shows BILL is delivering.
    feed.heard(ORG, 'sub-1');
    expect(feed.fed(ORG, 'bill')).toBe(true);
    // One from a subscription billbridge does not know vouches for nothing.
    feed.heard(ORG, 'sub-unknown');
    expect(feed.fed(ORG, 'invoice')).toBe(false);
    clock.advance(CHECK_MS);
    expect(feed.fed(ORG, 'bill')).toBe(false);
    setFail(false);
    await feed.refresh(ORG);
    expect(feed.fed(ORG, 'bill')).toBe(true);
  });

  it('is off with a check interval of 0 (CACHE_TTL_PUSHED_S=0), and asks BILL nothing', async () => {
    const clock = new ManualClock(0);
    let asked = 0;
    const feed = new PushFeed({
      bill: {} as unknown as BillGateway,
      clock,
      log: createLogger({ level: 'silent', secrets: new SecretRegistry() }),
      subscriptions: async () => (asked++, []),
      checkMs: 0,
    });
    expect(feed.fed(ORG, 'bill')).toBe(false);
    expect(asked).toBe(0);
  });
});
