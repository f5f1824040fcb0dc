// The approvals service built from only the parts it declares (no app, no bot): a click is checked against the signed
// data and the card's record before anything reaches BILL, and the approver's decision goes to BILL once, as them.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BillOrgClient } from '../../src/bill/api.js';
import type { BillGateway, PersonCredentials } from '../../src/bill/gateway.js';
import { ManualClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { AuditTrail } from '../../src/infra/audit.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { NS } from '../../src/infra/state/types.js';
import type { ApprovalCardState } from '../../src/features/approvals/cardRecords.js';
import { APPROVAL_VERBS } from '../../src/features/approvals/cards.js';
import { memoryLinkAttempts } from '../../src/features/approvals/linkAttempts.js';
import { Approvals, type ApprovalClick } from '../../src/features/approvals/service.js';
import { UserLinks, type UserLink } from '../../src/features/approvals/userLinks.js';
import { LogCapture } from '../harness/logs.js';

const TENANT = 'aaaaaaaa-0000-4000-8000-000000000001';
const ORG = '00801DEMOORGANIZATION';
const CHAT = 'a:personal-dana';
const DANA: UserLink = {
  tenantId: TENANT,
  aadObjectId: '11111111-0000-4000-8000-00000000d0d0',
  orgId: ORG,
  billUserId: '00601DANA',
  token: { name: 'dana-teams', value: 'tok_service_test_0123456789' },
  teamsUserId: '29:user-dana',
  displayName: 'Dana Lee',
};

let dir: string;
let store: SqliteStateStore;
let logs: LogCapture;
let sent: Array<{ person: string; billId: string; action: string }>;
/** What BILL answers a decision with. */
let actStatus: string;

const BILL1 = { billId: '00n01BILL1', vendorId: '00901VENDOR', amount: 1250, dueDate: '2026-11-30' };
const BILL2 = { billId: '00n01BILL2', vendorId: '00901VENDOR', amount: 980, dueDate: '2026-12-01' };

/** `waiting`: the bills BILL says wait on Dana (a decision sent to BILL takes its bill off). */
function service(waiting = [BILL1]): Approvals {
  const clock = new ManualClock(Date.UTC(2026, 10, 21, 9, 0));
  const log = createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: logs });
  const secretsKey = randomBytes(32);
  // BILL as Dana: one bill waits on her; a decision is recorded with the session it came in.
  const bill = {
    orgAs: (_orgId: string, person: PersonCredentials) =>
      ({
        approvals: {
          pending: async () => waiting.filter((w) => !sent.some((s) => s.billId === w.billId)),
          act: async (actions: Array<{ billId: string; action: string }>) => {
            for (const a of actions) sent.push({ person: person.username, billId: a.billId, action: a.action });
            return { status: actStatus };
          },
        },
        bills: { list: () => ({ all: async () => ({ items: [] }) }) },
      }) as unknown as BillOrgClient,
    releaseAs: async () => undefined,
    forgetRefusedAs: () => undefined,
  } satisfies Pick<BillGateway, 'orgAs' | 'releaseAs' | 'forgetRefusedAs'>;
  return new Approvals({
    links: new UserLinks({ store, secretsKey, log, clock }),
    store,
    secretsKey,
    attempts: memoryLinkAttempts(5, 60, clock),
    bill,
    vendors: { names: async () => new Map([['00901VENDOR', { id: '00901VENDOR', name: 'Acme Paper', currency: 'USD', archived: false }]]) },
    waitMs: 1_000,
    orgs: { resolve: async () => ORG, mode: 'single', allowedOrg: () => undefined },
    audit: new AuditTrail({ store, clock, log, scrub: (t) => t }),
    clock,
    fmt: { locale: 'en-US', timeZone: 'UTC' },
    note: undefined,
  });
}

function click(data: Record<string, unknown>): ApprovalClick {
  return {
    data: data as ApprovalClick['data'],
    scope: {
      kind: 'personal',
      tenantId: TENANT,
      teamId: undefined,
      aadGroupId: undefined,
      channelId: undefined,
      conversationId: CHAT,
      serviceUrl: 'https://smba.example/',
    },
    caller: { id: DANA.teamsUserId, aadObjectId: DANA.aadObjectId, name: 'Dana Lee' },
    correlationId: 'c-1',
    log: createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: logs }),
    reference: {},
  };
}

/** Dana's approvals card, shown in her personal chat: its id and the Approve button's signature. */
async function shownCard(approvals: Approvals, billId = '00n01BILL1', waiting = 1): Promise<{ card: string; sig: string }> {
  await approvals.links.put(DANA);
  const shown = await approvals.pendingReply(DANA, { kind: 'personal', conversationId: CHAT });
  expect(shown.waiting).toBe(waiting);
  const approve = new RegExp(`"verb":"approvals\\.approve","card":"([^"]+)","bill":"${billId}","sig":"([^"]+)"`).exec(
    JSON.stringify(shown.reply.card),
  );
  expect(approve).not.toBeNull();
  return { card: approve![1]!, sig: approve![2]! };
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'billbridge-approvals-'));
  store = new SqliteStateStore(dir, new ManualClock(Date.UTC(2026, 10, 21, 9, 0)));
  logs = new LogCapture('approvals service test');
  sent = [];
  actStatus = 'SUCCESS';
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the approvals service on its own parts', () => {
  it('refuses an Approve whose signature was changed, records the refusal, and sends nothing to BILL', async () => {
    const approvals = service();
    const { card, sig } = await shownCard(approvals);
    const forged = `${sig.slice(0, -2)}${sig.endsWith('AA') ? 'BB' : 'AA'}`;
    const reply = await approvals.decide(click({ verb: APPROVAL_VERBS.approve, card, bill: '00n01BILL1', sig: forged }), 'APPROVE');
    expect(reply.privateReply).toBe(true);
    expect(reply.summary).toContain("can't be used");
    expect(sent).toEqual([]);
    const audit = readFileSync(join(dir, 'audit.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(audit).toEqual([expect.objectContaining({ kind: 'approval', result: 'refused', reason: 'card data altered' })]);
  });

  it("sends Dana's Approve to BILL once, in her own session, and shows the bill approved by her", async () => {
    const approvals = service();
    const { card, sig } = await shownCard(approvals);
    const reply = await approvals.decide(click({ verb: APPROVAL_VERBS.approve, card, bill: '00n01BILL1', sig }), 'APPROVE');
    expect(sent).toEqual([{ person: DANA.token.name, billId: '00n01BILL1', action: 'APPROVE' }]);
    expect(JSON.stringify(reply.card)).toContain('Approved by Dana Lee');
    expect(reply.everyone).toBeDefined();
    // The same button again: already decided on this card, nothing more goes to BILL.
    const again = await approvals.decide(click({ verb: APPROVAL_VERBS.approve, card, bill: '00n01BILL1', sig }), 'APPROVE');
    expect(JSON.stringify(again.card)).toContain('already decided');
    expect(sent).toHaveLength(1);
  });

  it('two bills of one card approved at the same moment (two devices, two quick clicks): the card keeps both decisions', async () => {
    const approvals = service([BILL1, BILL2]);
    await approvals.links.put(DANA);
    const shown = JSON.stringify((await approvals.pendingReply(DANA, { kind: 'personal', conversationId: CHAT })).reply.card);
    const buttons = new Map(
      [...shown.matchAll(/"verb":"approvals\.approve","card":"([^"]+)","bill":"([^"]+)","sig":"([^"]+)"/g)].map((m) => [
        m[2]!,
        { card: m[1]!, bill: m[2]!, sig: m[3]! },
      ]),
    );
    expect([...buttons.keys()]).toEqual(['00n01BILL1', '00n01BILL2']);
    const replies = await Promise.all(
      [...buttons.values()].map((b) => approvals.decide(click({ verb: APPROVAL_VERBS.approve, ...b }), 'APPROVE')),
    );
    expect(sent.map((x) => x.billId).sort()).toEqual(['00n01BILL1', '00n01BILL2']);
    // The reply of the click that finished last (the edit Teams keeps) and the record later clicks are checked against
    // both say the two bills were approved by Dana.
    expect(replies.map((r) => JSON.stringify(r.everyone).match(/Approved by Dana Lee/g)?.length ?? 0).sort()).toEqual([1, 2]);
    const card = await store.get<ApprovalCardState>(NS.approvalCards, `card|${buttons.get('00n01BILL1')!.card}`);
    expect(card?.bills.map((b) => b.decision?.action)).toEqual(['APPROVE', 'APPROVE']);
  });

  it("someone else's click on a card whose approver's Teams name is markdown gets the name as typed, not a link in the bot's voice", async () => {
    const approvals = service();
    await approvals.links.put({ ...DANA, displayName: 'Dana [click](https://evil.example) **now**' });
    const link = (await approvals.links.get(DANA))!;
    const shown = JSON.stringify((await approvals.pendingReply(link, { kind: 'personal', conversationId: CHAT })).reply.card);
    const [, card, bill, sig] = /"verb":"approvals\.approve","card":"([^"]+)","bill":"([^"]+)","sig":"([^"]+)"/.exec(shown)!;
    const eve = click({ verb: APPROVAL_VERBS.approve, card, bill, sig });
    eve.caller = { id: '29:user-eve', aadObjectId: '99999999-0000-4000-8000-0000000000ee', name: 'Eve' };
    const reply = JSON.stringify((await approvals.decide(eve, 'APPROVE')).card);
    expect(reply).toContain('Only the assigned approver can act');
    expect(reply).not.toContain('[click](https://evil.example)');
    expect(reply).not.toContain('**now**');
    expect(sent).toEqual([]);
  });

  it("a status BILL answers a decision with that is markdown is shown as text, not as a link in the bot's voice", async () => {
    const approvals = service();
    const { card, sig } = await shownCard(approvals);
    actStatus = '[click](https://evil.example)';
    const reply = await approvals.decide(click({ verb: APPROVAL_VERBS.approve, card, bill: '00n01BILL1', sig }), 'APPROVE');
    // The card's text (its summary is plain text and carries BILL's words as they are, as every summary does).
    const json = JSON.stringify(reply.card.body);
    expect(json).toContain('BILL did not confirm the decision');
    expect(json).not.toContain('[click](https://evil.example)');
  });
});
