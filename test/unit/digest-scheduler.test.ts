// The digest scheduler on a shared store with a fake clock: one post per channel and slot even with two instances
// ticking at once, a failed send retried within the catch-up window, and a crash during a send never re-posted.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { digestScheduler, type DigestContent } from '../../src/notify/digests.js';
import { ChannelSubscriptions } from '../../src/notify/subscriptions.js';
import type { ChannelSender, ChannelTarget, NotificationPresenter } from '../../src/notify/types.js';
import { LogCapture } from '../harness/logs.js';
import { RecordingSender } from '../harness/sender.js';

const ORG = '00801DEMOORG00000001';
const target = { tenantId: 'aaaaaaaa-0000-4000-8000-000000000001', teamId: '19:team-a@thread.tacv2', channelId: '19:chan-a@thread.tacv2' };
const reference = { channelId: 'msteams', serviceUrl: 'https://smba.example/', conversation: { id: target.channelId } };

let dir: string;
let store: SqliteStateStore;
let clock: ManualClock;
const logs = new LogCapture('digest scheduler');
const log = createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: logs });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'billbridge-digest-'));
  clock = new ManualClock(Date.parse('2026-03-02T08:00:00Z'));
  store = new SqliteStateStore(dir, clock);
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

let version = 1;
async function compose(orgId: string, now: number, cadence: DigestContent['cadence']): Promise<DigestContent> {
  return {
    orgId,
    today: new Date(now).toISOString().slice(0, 10),
    cadence,
    dueSoon: [],
    overdueBills: [],
    overdueInvoices: [],
    truncated: false,
    asOf: now,
    fingerprint: `v${version}`,
  };
}
const presenter: NotificationPresenter = {
  event: () => ({ card: {}, summary: 'event' }),
  digest: (c) => ({ card: {}, summary: `digest ${c.today} ${c.fingerprint}` }),
};

function scheduler(
  sender: ChannelSender,
  onChannelGone = async (_target: ChannelTarget, _reason: string) => undefined,
  draw: NotificationPresenter = presenter,
) {
  return digestScheduler({
    state: store,
    clock,
    log,
    timeZone: 'UTC',
    subscriptions: new ChannelSubscriptions(store, clock),
    compose,
    resolveOrg: async () => ORG,
    sender,
    presenter: draw,
    onChannelGone,
  });
}

async function schedule(): Promise<void> {
  await new ChannelSubscriptions(store, clock).setDigest(target, {
    schedule: { every: 'daily', time: '09:00' },
    reference,
  });
}

describe('one digest per channel and slot', () => {
  it('two instances ticking at the same moment post it once', async () => {
    await schedule();
    const sender = new RecordingSender();
    const a = scheduler(sender);
    const b = scheduler(sender);
    clock.set(Date.parse('2026-03-02T09:00:05Z'));
    const [ra, rb] = await Promise.all([a.tick(), b.tick()]);
    expect(ra.posted + rb.posted).toBe(1);
    expect(sender.sent).toEqual(['digest 2026-03-02 v1']);
    expect((await a.tick()).posted + (await b.tick()).posted).toBe(0);
  });

  it('a send Teams refused is tried again on a later tick of the same slot', async () => {
    await schedule();
    const sender = new RecordingSender();
    sender.next = [{ ok: false, status: 502, message: 'bad gateway' }];
    const s = scheduler(sender);
    clock.set(Date.parse('2026-03-02T09:00:05Z'));
    expect(await s.tick()).toMatchObject({ posted: 0, failed: 1 });
    clock.advance(30_000);
    expect(await s.tick()).toMatchObject({ posted: 1 });
    expect(sender.sent).toHaveLength(1);
  });

  it('a digest card that cannot be drawn leaves the slot open (not marked as being sent), so a later tick posts it', async () => {
    await schedule();
    const sender = new RecordingSender();
    let broken = true;
    const draw: NotificationPresenter = {
      ...presenter,
      digest: (c) => {
        if (broken) throw new RangeError('Invalid time value');
        return presenter.digest(c);
      },
    };
    const s = scheduler(sender, undefined, draw);
    clock.set(Date.parse('2026-03-02T09:00:05Z'));
    await s.tick();
    expect(sender.sent).toEqual([]);
    broken = false;
    clock.advance(30_000);
    expect(await s.tick()).toMatchObject({ posted: 1 });
    expect(sender.sent).toEqual(['digest 2026-03-02 v1']);
  });

  it('an instance that died while sending leaves the slot alone: it is not posted a second time', async () => {
    await schedule();
    const dying = new RecordingSender();
    dying.next = ['hang'];
    clock.set(Date.parse('2026-03-02T09:00:05Z'));
    void scheduler(dying).tick();
    // Wait until the dying instance has marked the slot as being sent.
    await expect
      .poll(async () =>
        (await store.entries<{ state?: string }>('digests')).some(
          ([k, v]) => k.includes('|slot|') && !k.endsWith('|lease') && v.state === 'sending',
        ),
      )
      .toBe(true);
    // Its lease runs out; another instance comes along.
    clock.advance(15 * 60_000);
    const survivor = new RecordingSender();
    expect(await scheduler(survivor).tick()).toMatchObject({ posted: 0 });
    expect(survivor.sent).toEqual([]);
  });

  it('a channel the bot was taken out of (404) is reported gone and its slot is not tried again; another 403 is retried', async () => {
    await schedule();
    const sender = new RecordingSender();
    sender.next = [
      { ok: false, status: 403, code: 'ConversationBlocked', message: 'blocked' },
      { ok: false, status: 404, message: 'not found' },
    ];
    const gone: string[] = [];
    const s = scheduler(sender, async (t, reason) => {
      gone.push(`${t.channelId} ${reason}`);
    });
    clock.set(Date.parse('2026-03-02T09:00:05Z'));
    expect(await s.tick()).toMatchObject({ posted: 0, failed: 1 });
    expect(gone).toEqual([]);
    clock.advance(30_000);
    expect(await s.tick()).toMatchObject({ posted: 0, failed: 0 });
    expect(gone).toEqual([`${target.channelId} HTTP 404`]);
    clock.advance(30_000);
    expect(await s.tick()).toMatchObject({ posted: 0, failed: 0 });
    expect(sender.sent).toEqual([]);
  });

  it('the first slot after the schedule was set counts, earlier ones never do', async () => {
    clock.set(Date.parse('2026-03-02T09:30:00Z'));
    await schedule();
    const sender = new RecordingSender();
    const s = scheduler(sender);
    expect(await s.tick()).toMatchObject({ posted: 0 });
    clock.set(Date.parse('2026-03-03T09:00:00Z'));
    expect(await s.tick()).toMatchObject({ posted: 1 });
    // Unchanged the next day: skipped; changed the day after: posted.
    clock.set(Date.parse('2026-03-04T09:00:00Z'));
    expect(await s.tick()).toMatchObject({ posted: 0, unchanged: 1 });
    version = 2;
    clock.set(Date.parse('2026-03-05T09:00:00Z'));
    expect(await s.tick()).toMatchObject({ posted: 1 });
    expect(sender.sent).toEqual(['digest 2026-03-03 v1', 'digest 2026-03-05 v2']);
  });
});
