// The sandbox's approval policies over raw HTTP, as a BILL client sees them: ordered approvers, each approver's own
// pending list, approve/deny in the acting user's session (BILL records who), and the /__sandbox/ controls tests use.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bill } from '../../src/bill/types.js';
import { registerSecrets } from '../harness/secretScan.js';
import { startTestSandbox, type TestSandbox } from '../harness/sandbox.js';

let sb: TestSandbox;
const tokens: string[] = [];

beforeAll(async () => {
  sb = await startTestSandbox();
  registerSecrets(() => tokens);
});
afterAll(async () => {
  await sb.stop();
});

/**
 * A BILL answer as these tests read it: an object or a list of errors from index 0. Every field is optional and
 * each test asserts the ones it reads; an empty answer reads as {}.
 */
interface BillAnswer {
  sessionId?: string;
  bills?: Array<{ billId: string }>;
  [index: number]: { code?: string; severity?: string } | undefined;
}

async function call(method: string, path: string, opts: { headers?: Record<string, string>; body?: unknown } = {}) {
  const res = await request(`${sb.baseUrl}${path}`, {
    method: method as 'GET',
    headers: { 'content-type': 'application/json', ...opts.headers },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? (JSON.parse(text) as BillAnswer) : {} };
}

/** Signs a demo user in with a fresh sync token made through /__sandbox/, as a person would with their own token. */
async function signInAs(firstName: string): Promise<{ userId: string; headers: Record<string, string> }> {
  const users = (await sb.control('GET', '/users')).json as unknown as Array<{ id: string; firstName: string }>;
  const user = users.find((u) => u.firstName === firstName)!;
  const made = await sb.control('POST', `/users/${user.id}/sync-tokens`, {});
  expect(made.status).toBe(201);
  tokens.push(String(made.json?.value));
  const login = await call('POST', '/v3/login', {
    body: { username: made.json?.name, password: made.json?.value, organizationId: sb.credentials.orgId, devKey: sb.credentials.devKey },
  });
  expect(login.status).toBe(200);
  tokens.push(login.json.sessionId!);
  return { userId: user.id, headers: { devKey: sb.credentials.devKey, sessionId: login.json.sessionId! } };
}

const pendingIds = async (headers: Record<string, string>): Promise<string[]> =>
  (await call('GET', '/v3/bill-approvals/pending-user-approvals', { headers })).json.bills!.map((b) => b.billId);

function unpaidBill(skip: string[] = []): Bill {
  return sb.sandbox.org.bills
    .all()
    .find((b) => !b.archived && b.paymentStatus !== 'PAID' && b.approvalStatus === 'UNASSIGNED' && !skip.includes(b.id))!;
}

describe('bill approvals in the sandbox', () => {
  it('lets two approvers in order see and approve a bill in turn, recording each as the one who acted', async () => {
    const priya = await signInAs('Priya');
    const marcus = await signInAs('Marcus');
    const bill = unpaidBill();
    const assigned = await sb.control('POST', `/bills/${bill.id}/approvers`, { userIds: [priya.userId, marcus.userId] });
    expect(assigned.json).toMatchObject({
      approvalStatus: 'ASSIGNED',
      approvers: [
        { userId: priya.userId, status: 'WAITING', approverOrder: 1 },
        { userId: marcus.userId, status: 'WAITING', approverOrder: 2 },
      ],
    });

    expect(await pendingIds(priya.headers)).toContain(bill.id);
    expect(await pendingIds(marcus.headers)).not.toContain(bill.id);
    // Marcus cannot act before his turn; nothing changes.
    const early = await call('POST', '/v3/bill-approvals/actions', {
      headers: marcus.headers,
      body: [{ billId: bill.id, action: 'APPROVE' }],
    });
    expect(early.status).toBe(400);
    expect(sb.sandbox.org.bills.get(bill.id)!.approvers!.every((a) => a.status === 'WAITING')).toBe(true);

    const first = await call('POST', '/v3/bill-approvals/actions', {
      headers: priya.headers,
      body: [{ billId: bill.id, action: 'APPROVE', comment: 'Matches the PO' }],
    });
    expect(first).toEqual({ status: 200, json: { status: 'SUCCESS' } });
    let now = (await call('GET', `/v3/bills/${bill.id}`, { headers: priya.headers })).json as unknown as Bill;
    expect(now.approvalStatus).toBe('ASSIGNED');
    expect(now.approvers![0]).toMatchObject({ userId: priya.userId, status: 'APPROVED' });
    expect(await pendingIds(priya.headers)).not.toContain(bill.id);
    expect(await pendingIds(marcus.headers)).toContain(bill.id);

    expect(
      (await call('POST', '/v3/bill-approvals/actions', { headers: marcus.headers, body: [{ billId: bill.id, action: 'APPROVE' }] }))
        .status,
    ).toBe(200);
    now = (await call('GET', `/v3/bills/${bill.id}`, { headers: marcus.headers })).json as unknown as Bill;
    expect(now.approvalStatus).toBe('APPROVED');
    expect(now.approvers!.map((a) => a.status)).toEqual(['APPROVED', 'APPROVED']);

    const decisions = (await sb.control('GET', '/approvals/decisions')).json as unknown as Array<Record<string, unknown>>;
    expect(decisions.filter((d) => d.billId === bill.id)).toEqual([
      expect.objectContaining({ userId: priya.userId, action: 'APPROVE', comment: 'Matches the PO', sessionKind: 'syncToken' }),
      expect.objectContaining({ userId: marcus.userId, action: 'APPROVE', sessionKind: 'syncToken' }),
    ]);
  });

  it("denies the whole bill on one denial, and refuses bodies that are not BILL's array shape", async () => {
    const priya = await signInAs('Priya');
    const marcus = await signInAs('Marcus');
    const bill = unpaidBill();
    await sb.control('POST', `/bills/${bill.id}/approvers`, { userIds: [priya.userId, marcus.userId] });
    for (const body of [
      { billId: bill.id, action: 'DENY' },
      [],
      [{ billId: bill.id, action: 'deny' }],
      [{ billId: bill.id }],
      [
        { billId: bill.id, action: 'DENY' },
        { billId: bill.id, action: 'DENY' },
      ],
    ]) {
      const res = await call('POST', '/v3/bill-approvals/actions', { headers: priya.headers, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json[0]).toMatchObject({ severity: 'ERROR' });
    }
    expect(
      (
        await call('POST', '/v3/bill-approvals/actions', {
          headers: priya.headers,
          body: [{ billId: '00n01NOSUCHBILL0000', action: 'APPROVE' }],
        })
      ).json[0]!.code,
    ).toBe('BDC_1205');
    expect((await call('POST', '/v3/bill-approvals/actions', { body: [{ billId: bill.id, action: 'DENY' }] })).json[0]!.code).toBe(
      'BDC_1102',
    );

    expect(
      (
        await call('POST', '/v3/bill-approvals/actions', {
          headers: priya.headers,
          body: [{ billId: bill.id, action: 'DENY', comment: 'Duplicate of last month' }],
        })
      ).status,
    ).toBe(200);
    const denied = sb.sandbox.org.bills.get(bill.id)!;
    expect(denied.approvalStatus).toBe('DENIED');
    expect(denied.approvers!.map((a) => a.status)).toEqual(['DENIED', 'WAITING']);
    // A denied bill waits on nobody.
    expect(await pendingIds(marcus.headers)).not.toContain(bill.id);
  });

  it("ends a revoked token's sessions, and lists users without their passwords or token values", async () => {
    const priya = await signInAs('Priya');
    const users = (await sb.control('GET', '/users')).json as unknown as Array<Record<string, unknown>>;
    const p = users.find((u) => u.id === priya.userId)!;
    expect(p).not.toHaveProperty('password');
    expect(JSON.stringify(users)).not.toContain(tokens[0]!);
    const names = p.syncTokens as string[];
    for (const name of names) await sb.control('DELETE', `/users/${priya.userId}/sync-tokens/${encodeURIComponent(name)}`);
    expect((await call('GET', '/v3/login/session', { headers: priya.headers })).json[0]!.code).toBe('BDC_1109');
  });
});
