// The approvals digest's slot on a shared store with a fake clock, as channel digests are tested: one message per
// approver and slot even with two instances ticking at once, a slot whose reader died is sent once its lease has
// expired, a crash during the send is never sent again, and a failed send is held a few minutes before the retry.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { approvalDigestJob } from '../../src/features/approvals/digest.js';
import type { Approvals } from '../../src/features/approvals/service.js';
import { UserLinks, type UserLink } from '../../src/features/approvals/userLinks.js';
import type { ChannelSender } from '../../src/notify/types.js';
import { LogCapture } from '../harness/logs.js';
import { RecordingSender } from '../harness/sender.js';

const LINK: UserLink = {
  tenantId: 'aaaaaaaa-0000-4000-8000-000000000001',
  aadObjectId: '22222222-0000-4000-8000-0000000000a1',
  orgId: '00801DEMOORG00000001',
  billUserId: '00601USER000000001',
  token: { name: 'priya-teams', value: 'not-a-real-token' },
  teamsUserId: '29:user-priya',
  reference: { channelId: 'msteams', serviceUrl: 'https://smba.example/', conversation: { id: 'a:personal-priya' } },
  digestTime: '09:00',
  digestSince: 0,
};
const MIN = 60_000;
const SECRETS_KEY = randomBytes(32);

let dir: string;
let store: SqliteStateStore;
let clock: ManualClock;
const logs = new LogCapture('approvals digest');
const log = createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: logs });

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'billbridge-approvals-digest-'));
  clock = new ManualClock(Date.parse('2026-03-02T09:00:05Z'));
  store = new SqliteStateStore(dir, clock);
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One instance's approvals digest job; `reads` counts its BILL reads, `hang` makes the next read never answer. */
async function instance(sender: ChannelSender, opts: { hang?: boolean } = {}) {
  const links = new UserLinks({ store, secretsKey: SECRETS_KEY, log, clock });
  await links.put(LINK);
  const reads = { count: 0 };
  const approvals = {
    links,
    pendingReply: async () => {
      reads.count++;
      if (opts.hang) return new Promise<never>(() => undefined);
      return { reply: { card: {}, summary: '2 bills wait for you' }, waiting: 2 };
    },
  } as unknown as Approvals;
  const job = approvalDigestJob({ approvals, state: store, timeZone: 'UTC', sender, clock, log });
  return { job, reads };
}
describe('one approvals digest per approver and slot', () => {
  it('two instances ticking at the same moment send it once', async () => {
    const sender = new RecordingSender();
    const a = await instance(sender);
    const b = await instance(sender);
    const [ra, rb] = await Promise.all([a.job.tick(), b.job.tick()]);
    expect(ra.sent + rb.sent).toBe(1);
    expect(sender.sent).toEqual(['Approvals digest: 2 bills wait for you']);
    clock.advance(15 * MIN);
    expect((await a.job.tick()).sent + (await b.job.tick()).sent).toBe(0);
    expect(sender.sent).toHaveLength(1);
  });

  it('an instance that died while reading the bills does not lose the slot: another sends it once the lease has expired', async () => {
    const dying = await instance(new RecordingSender(), { hang: true });
    void dying.job.tick();
    await expect.poll(() => dying.reads.count).toBe(1);
    const survivor = new RecordingSender();
    const other = await instance(survivor);
    // The lease still holds: the slot is being worked on.
    expect(await other.job.tick()).toEqual({ sent: 0, empty: 0, failed: 0 });
    expect(other.reads.count).toBe(0);
    clock.advance(15 * MIN);
    expect(await other.job.tick()).toEqual({ sent: 1, empty: 0, failed: 0 });
    expect(survivor.sent).toEqual(['Approvals digest: 2 bills wait for you']);
  });

  it('an instance that died while sending leaves the slot alone: it is not sent a second time', async () => {
    const dying = new RecordingSender();
    dying.next = ['hang'];
    const first = await instance(dying);
    void first.job.tick();
    // Wait until the dying instance has marked the slot as being sent.
    await expect
      .poll(async () =>
        (await store.entries<{ state?: string }>('approval-digests')).some(([k, v]) => !k.endsWith('|lease') && v.state === 'sending'),
      )
      .toBe(true);
    clock.advance(15 * MIN);
    const survivor = new RecordingSender();
    const other = await instance(survivor);
    expect(await other.job.tick()).toEqual({ sent: 0, empty: 0, failed: 0 });
    expect(other.reads.count).toBe(0);
    expect(survivor.sent).toEqual([]);
  });

  it('a send Teams refused is held a few minutes, then tried again within the catch-up window', async () => {
    const sender = new RecordingSender();
    sender.next = [{ ok: false, status: 502, message: 'bad gateway' }];
    const s = await instance(sender);
    expect(await s.job.tick()).toEqual({ sent: 0, empty: 0, failed: 1 });
    clock.advance(MIN);
    expect(await s.job.tick()).toEqual({ sent: 0, empty: 0, failed: 0 });
    clock.advance(5 * MIN);
    expect(await s.job.tick()).toEqual({ sent: 1, empty: 0, failed: 0 });
    expect(sender.sent).toHaveLength(1);
  });

  it('a person who removed the bot (403) gets no more digests, and their BILL is not read for one every day', async () => {
    const sender = new RecordingSender();
    sender.next.push({ ok: false, status: 403, code: 'BotNotInConversationRoster', message: 'no' });
    const a = await instance(sender);
    await a.job.tick();
    expect(a.reads.count).toBe(1);
    clock.advance(24 * 60 * MIN);
    await a.job.tick();
    expect(a.reads.count).toBe(1);
    expect(sender.sent).toEqual([]);
  });
});
