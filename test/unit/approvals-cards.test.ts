// Approval cards as Teams renders them: valid 1.5 under 40 KB, buttons only in the approver's own view, the approver
// named in refresh.userIds, outcomes in words, masked token inputs, and nothing from BILL able to format or link.
import { describe, expect, it } from 'vitest';
import {
  APPROVAL_VERBS,
  CONNECT_INPUTS,
  MAX_CARD_BILLS,
  approvalsCard,
  approvalsOffCard,
  connectCard,
  connectElsewhereCard,
  connectedCard,
  digestSettingCard,
  disconnectedCard,
  nothingWaitingCard,
  type ApprovalCardOptions,
} from '../../src/features/approvals/cards.js';
import type { ApprovalCardState } from '../../src/features/approvals/cardRecords.js';
import { checkCard } from '../harness/cards.js';

const NOW = Date.UTC(2026, 10, 23, 9, 42);
const fmt = { locale: 'en-US', timeZone: 'UTC' };

function state(n: number, over: Partial<ApprovalCardState> = {}): ApprovalCardState {
  return {
    id: 'card123',
    tenantId: 't',
    conversationId: '19:channel@thread.tacv2',
    kind: 'channel',
    orgId: '00801ORG',
    approver: { aadObjectId: 'aad-dana', teamsUserId: '29:user-dana', name: 'Dana Lee' },
    bills: Array.from({ length: n }, (_, i) => ({
      billId: `00n01BILL${String(i).padStart(10, '0')}`,
      vendorName: `${'Very Long Vendor Name Holdings International '.repeat(3)}${i}`,
      amount: 1234.56 + i,
      currency: i % 2 ? 'EUR' : 'USD',
      dueDate: '2026-11-25',
      invoiceNumber: `INV-${'9'.repeat(40)}-${i}`,
    })),
    more: 0,
    createdAt: NOW,
    updatedAt: NOW,
    ...over,
  };
}

function opts(s: ApprovalCardState, actionable: boolean, extra: Partial<ApprovalCardOptions> = {}): ApprovalCardOptions {
  return { state: s, actionable, fmt, today: '2026-11-23', sign: (v, c, b) => `sig:${v}:${c}:${b}`, ...extra };
}

/** A card element or action, as far as these tests read it. */
interface CardNode {
  type?: string;
  id?: string;
  verb?: string;
  text?: string;
  style?: string;
  value?: unknown;
  fallback?: unknown;
  data?: Record<string, unknown>;
}

function all(card: unknown): CardNode[] {
  const out: CardNode[] = [];
  const walk = (n: unknown) => {
    if (!n || typeof n !== 'object') return;
    if (Array.isArray(n)) {
      n.forEach(walk);
      return;
    }
    out.push(n);
    Object.values(n).forEach(walk);
  };
  walk(card);
  return out;
}
const verbs = (card: unknown) =>
  all(card)
    .filter((n) => n.type === 'Action.Execute')
    .map((n) => n.verb);
const textOf = (card: unknown) =>
  all((card as { body: unknown }).body)
    .filter((n) => n.type === 'TextBlock')
    .map((n) => n.text);

function ok(card: unknown): void {
  const check = checkCard(card);
  expect(check.problems).toEqual([]);
  expect(check.bytes).toBeLessThan(40 * 1024);
}

describe('the approvals card', () => {
  it('gives the approver Approve, Deny and a comment box per bill, within 40 KB at the most bills a card holds', () => {
    const { card } = approvalsCard(opts(state(MAX_CARD_BILLS), true));
    ok(card);
    expect(verbs(card).filter((v) => v === APPROVAL_VERBS.approve)).toHaveLength(MAX_CARD_BILLS);
    expect(verbs(card).filter((v) => v === APPROVAL_VERBS.deny)).toHaveLength(MAX_CARD_BILLS);
    expect(
      all(card.body)
        .filter((n) => n.type === 'Input.Text')
        .map((n) => n.id),
    ).toEqual(Array.from({ length: MAX_CARD_BILLS }, (_, i) => `comment_${i}`));
    const approve = all(card).find((n) => n.type === 'Action.Execute' && n.verb === APPROVAL_VERBS.approve)!;
    expect(approve.data).toEqual({
      verb: APPROVAL_VERBS.approve,
      card: 'card123',
      bill: '00n01BILL0000000000',
      sig: `sig:${APPROVAL_VERBS.approve}:card123:00n01BILL0000000000`,
    });
    expect(approve.fallback).toMatchObject({ type: 'Action.Submit', data: approve.data });
  });

  it('shows everyone else the same bills read-only, and names only the approver for the user-specific view', () => {
    const { card, summary } = approvalsCard(opts(state(3), false));
    ok(card);
    expect(verbs(card).filter((v) => v !== APPROVAL_VERBS.view)).toEqual([]);
    expect(all(card.body).some((n) => n.type === 'Input.Text')).toBe(false);
    expect(card.refresh).toEqual({
      action: {
        type: 'Action.Execute',
        title: 'Refresh',
        verb: APPROVAL_VERBS.view,
        data: { verb: APPROVAL_VERBS.view, card: 'card123', sig: `sig:${APPROVAL_VERBS.view}:card123:` },
      },
      userIds: ['29:user-dana'],
    });
    expect(textOf(card)[0]).toBe("Waiting for Dana Lee's approval");
    expect(summary).toBe("3 bills waiting for Dana Lee's approval.");
    expect(textOf(card).join(' ')).toContain('$1,234.56');
    expect(textOf(card).join(' ')).toContain('€1,235.56');
  });

  it('needs no user-specific view in a personal chat', () => {
    const { card } = approvalsCard(opts(state(2, { kind: 'personal' }), true));
    ok(card);
    expect(card.refresh).toBeUndefined();
    expect(textOf(card)[0]).toBe('Waiting for your approval');
  });

  it('says who decided each bill and when, keeps buttons on the rest, and stops refreshing once all are decided', () => {
    const s = state(2);
    s.bills[0]!.decision = { action: 'APPROVE', byName: 'Dana Lee', at: NOW, comment: 'Matches *PO* 12' };
    const partly = approvalsCard(opts(s, true)).card;
    ok(partly);
    expect(textOf(partly)).toContain('Approved by Dana Lee at 09:42 AM');
    expect(textOf(partly)).toContain('“Matches \\*PO\\* 12”');
    expect(
      all(partly)
        .filter((n) => n.type === 'Action.Execute' && n.verb === APPROVAL_VERBS.approve)
        .map((n) => n.data?.bill),
    ).toEqual([s.bills[1]!.billId]);
    expect(partly.refresh).toBeDefined();

    s.bills[1]!.decision = { action: 'DENY', byName: 'Dana Lee', at: NOW };
    const done = approvalsCard(opts(s, false)).card;
    ok(done);
    expect(textOf(done)).toContain('Denied by Dana Lee at 09:42 AM');
    expect(done.refresh).toBeUndefined();
    expect(verbs(done)).toEqual([]);
  });

  it('escapes what came from BILL or Teams so it cannot format text or make links', () => {
    const s = state(1);
    s.bills[0]!.vendorName = '**Evil** [click](https://evil.example)';
    s.approver.name = '_Dana_ [x](y)';
    const { card } = approvalsCard(opts(s, false, { notice: { text: 'Only the assigned approver can act.', tone: 'attention' } }));
    ok(card);
    const text = textOf(card).join('\n');
    expect(text).toContain('\\*\\*Evil\\*\\* \\[click\\]\\(https\\://evil\\.example\\)');
    expect(text).not.toContain('[click](');
    expect(text).toContain('Only the assigned approver can act.');
  });

  it('a vendor name and invoice number of 60,000 characters from BILL are cut short, so the card of the most bills stays within 40 KB', () => {
    const s = state(MAX_CARD_BILLS);
    for (const b of s.bills) Object.assign(b, { vendorName: 'V'.repeat(60_000), invoiceNumber: '9'.repeat(60_000) });
    const { card } = approvalsCard(opts(s, true));
    ok(card);
    expect(textOf(card).join('\n')).toMatch(/V{100,}…/);
  });

  it('counts the bills beyond the card', () => {
    const { card } = approvalsCard(opts(state(2, { more: 7 }), false));
    expect(textOf(card)[1]).toContain('7 more in BILL');
  });
});

describe('the connect cards', () => {
  it('collects the token with masked inputs and never carries a value', () => {
    const { card } = connectCard({ askOrg: false });
    ok(card);
    const inputs = all(card.body).filter((n) => n.type === 'Input.Text');
    expect(inputs.map((i) => ({ id: i.id, style: i.style, value: i.value }))).toEqual([
      { id: CONNECT_INPUTS.tokenName, style: 'Password', value: undefined },
      { id: CONNECT_INPUTS.tokenValue, style: 'Password', value: undefined },
    ]);
    expect(verbs(card)).toEqual([APPROVAL_VERBS.connect]);
  });

  it('asks for the organisation only when the chat is bound to none in a multi-org deployment', () => {
    const { card } = connectCard({ askOrg: true, problem: 'BILL did not accept that token.' });
    ok(card);
    expect(
      all(card.body)
        .filter((n) => n.type === 'Input.Text')
        .map((n) => n.id),
    ).toEqual([CONNECT_INPUTS.orgId, CONNECT_INPUTS.tokenName, CONNECT_INPUTS.tokenValue]);
    expect(textOf(card)).toContain('BILL did not accept that token.');
  });

  it('outside a personal chat has no inputs at all', () => {
    for (const typed of [false, true]) {
      const { card } = connectElsewhereCard(typed);
      ok(card);
      expect(all(card).some((n) => String(n.type).startsWith('Input.'))).toBe(false);
    }
  });

  it('are valid for every other state', () => {
    for (const reply of [
      connectedCard({ billUserId: '00601USER', orgId: '00801ORG', replaced: true }),
      disconnectedCard([]),
      disconnectedCard(['00801ORG']),
      approvalsOffCard(),
      nothingWaitingCard({ name: 'Dana', personal: true, asOf: NOW, fmt }),
      digestSettingCard({ time: '08:30', changed: true, nextDate: '2026-11-24', fmt: { ...fmt, timeZone: 'Europe/Berlin' } }),
      digestSettingCard({ time: undefined, changed: true, fmt }),
    ]) {
      ok(reply.card);
      expect(reply.summary.length).toBeGreaterThan(0);
    }
  });
});
