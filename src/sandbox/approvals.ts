// The sandbox's bill approvals: ordered approver chains on bills (what a BILL approval policy assigns), per-user
// pending lists, approve/deny as the signed-in user (POST /v3/bill-approvals/actions), and /__sandbox/ controls for
// tests: the org's users, AP/AR sync tokens for approvers, assigning a chain to a bill, the decisions BILL recorded.
//
// BILL's shapes (Postman collection "bill-approvals"; shared/reference/bill-v3-api.md "Approvals"):
// - POST /v3/bill-approvals/actions takes an ARRAY [{billId, action: "APPROVE"|"DENY", comment}] and answers
//   {"status":"SUCCESS"}; it acts as the session's user, who must be the approver whose turn it is;
// - bills carry approvalStatus (UNASSIGNED, ASSIGNED, APPROVED, DENIED) and approvers[]{userId, status WAITING|
//   APPROVED|DENIED|REROUTED, approverOrder, statusChangedTime}; one denial denies the bill, the last approval
//   approves it. [I] The error BILL gives for acting out of turn is not documented: a 400 without a code here.
import { randomBytes } from 'node:crypto';
import type { Approver, Bill } from './types.js';
import { bdc } from './gate.js';
import type { SandboxApprovalDecision, SandboxModel, SandboxOrg, SandboxUser } from './model.js';
import { param, sessionOf, type RouteContext, type SandboxRoute } from './server.js';

/** Longest comment the sandbox takes on an approval action. */
const MAX_APPROVAL_COMMENT = 1000;

interface ActionItem {
  billId: string;
  action: 'APPROVE' | 'DENY';
  comment?: string;
}

const obj = (b: unknown) => (b && typeof b === 'object' && !Array.isArray(b) ? (b as Record<string, unknown>) : {});

function chainOf(bill: Bill): Approver[] {
  return [...(bill.approvers ?? [])].sort((a, b) => a.approverOrder - b.approverOrder);
}

/** Reads the body BILL expects; any deviation is a validation error (400, no code), as BILL answers them. */
function readActions(ctx: RouteContext): ActionItem[] {
  const body = ctx.body;
  if (!Array.isArray(body) || body.length === 0)
    throw bdc(ctx.clock, 400, undefined, 'Request body must be a non-empty array of approval actions.');
  if (body.length > 100) throw bdc(ctx.clock, 400, undefined, 'At most 100 approval actions per request.');
  const seen = new Set<string>();
  return body.map((raw, i) => {
    const item = obj(raw);
    if (typeof item.billId !== 'string' || item.billId === '') throw bdc(ctx.clock, 400, undefined, `[${i}].billId is required.`);
    if (item.action !== 'APPROVE' && item.action !== 'DENY') throw bdc(ctx.clock, 400, undefined, `[${i}].action must be APPROVE or DENY.`);
    if (item.comment !== undefined && (typeof item.comment !== 'string' || item.comment.length > MAX_APPROVAL_COMMENT)) {
      throw bdc(ctx.clock, 400, undefined, `[${i}].comment must be text of at most ${MAX_APPROVAL_COMMENT} characters.`);
    }
    if (seen.has(item.billId)) throw bdc(ctx.clock, 400, undefined, `[${i}].billId appears twice.`);
    seen.add(item.billId);
    return {
      billId: item.billId,
      action: item.action,
      ...(typeof item.comment === 'string' && item.comment !== '' ? { comment: item.comment } : {}),
    };
  });
}

/**
 * Applies approve/deny actions as `userId`, all or nothing: every bill must exist and be waiting on that user (their
 * approver entry WAITING and every earlier one APPROVED). Raises bill.updated for each changed bill.
 */
function applyApprovalActions(
  model: SandboxModel,
  org: SandboxOrg,
  userId: string,
  actions: ActionItem[],
  sessionKind: SandboxApprovalDecision['sessionKind'],
): SandboxApprovalDecision[] {
  const pending = new Set(model.pendingApprovals(org, userId).map((p) => p.billId));
  for (const a of actions) {
    if (!org.bills.has(a.billId)) throw bdc(model.clock, 404, 'BDC_1205', `Object with id ${a.billId.slice(0, 40)} was not found.`);
    if (!pending.has(a.billId))
      throw bdc(model.clock, 400, undefined, `Bill ${a.billId.slice(0, 40)} is not waiting for approval by the signed-in user.`);
  }
  const now = model.nowIso();
  const decisions: SandboxApprovalDecision[] = [];
  for (const a of actions) {
    const bill = org.bills.get(a.billId);
    const chain = bill ? chainOf(bill) : [];
    const mine = chain.find((x) => x.userId === userId && x.status === 'WAITING');
    // Checked above; only the same bill twice in one request gets here without a waiting entry.
    if (!bill || !mine)
      throw bdc(model.clock, 400, undefined, `Bill ${a.billId.slice(0, 40)} is not waiting for approval by the signed-in user.`);
    mine.status = a.action === 'APPROVE' ? 'APPROVED' : 'DENIED';
    mine.statusChangedTime = now;
    if (a.action === 'DENY') bill.approvalStatus = 'DENIED';
    else if (chain.every((x) => x.status === 'APPROVED')) bill.approvalStatus = 'APPROVED';
    bill.approvers = chain;
    bill.updatedTime = now;
    org.bills.put(bill);
    const decision: SandboxApprovalDecision = {
      billId: bill.id,
      userId,
      action: a.action,
      ...(a.comment ? { comment: a.comment } : {}),
      at: now,
      sessionKind,
    };
    org.approvalDecisions.push(decision);
    decisions.push(decision);
    model.emit({ orgId: org.id, type: 'bill.updated', version: '1', entityKey: 'bill', entity: { ...bill } });
  }
  return decisions;
}

/** Puts an ordered approver chain on a bill, as a matching approval policy does: everyone WAITING, bill ASSIGNED. */
function assignApprovers(model: SandboxModel, org: SandboxOrg, billId: string, userIds: string[]): Bill {
  const bill = org.bills.get(billId);
  if (!bill) throw bdc(model.clock, 404, 'BDC_1205', `Object with id ${billId.slice(0, 40)} was not found.`);
  if (bill.archived || bill.paymentStatus === 'PAID')
    throw bdc(model.clock, 400, undefined, 'Only unpaid, unarchived bills take approvers.');
  if (userIds.length === 0 || new Set(userIds).size !== userIds.length)
    throw bdc(model.clock, 400, undefined, 'userIds must list distinct users.');
  for (const id of userIds) {
    if (!org.users.has(id)) throw bdc(model.clock, 400, undefined, `User ${id.slice(0, 40)} is not a user of this organization.`);
  }
  const now = model.nowIso();
  bill.approvers = userIds.map((userId, i) => ({ userId, status: 'WAITING', approverOrder: i + 1, statusChangedTime: now }));
  bill.approvalStatus = 'ASSIGNED';
  bill.updatedTime = now;
  org.bills.put(bill);
  model.emit({ orgId: org.id, type: 'bill.updated', version: '1', entityKey: 'bill', entity: { ...bill } });
  return bill;
}

/** Creates an AP/AR sync token for a user (BILL: Settings > Sync & Integrations > Manage API tokens). */
function createSyncToken(org: SandboxOrg, userId: string, name?: string): { userId: string; name: string; value: string } {
  const user = org.users.get(userId);
  if (!user) throw new RangeError('no such user');
  const tokens = (user.syncTokens ??= []);
  const tokenName = name ?? `billbridge-${user.firstName.toLowerCase().replace(/[^a-z]/g, '')}-${tokens.length + 1}`;
  if (tokens.some((t) => t.name === tokenName)) throw new RangeError('token name in use');
  const token = { name: tokenName, value: randomBytes(24).toString('base64url') };
  tokens.push(token);
  org.users.put(user);
  return { userId, ...token };
}

function publicUser(u: SandboxUser) {
  return {
    id: u.id,
    email: u.email,
    firstName: u.firstName,
    lastName: u.lastName,
    role: u.role,
    syncTokens: (u.syncTokens ?? []).map((t) => t.name),
  };
}

export const approvalRoutes: SandboxRoute[] = [
  {
    area: 'connect',
    method: 'POST',
    path: '/v3/bill-approvals/actions',
    auth: 'session',
    handle: (ctx) => {
      const actions = readActions(ctx);
      const session = sessionOf(ctx);
      applyApprovalActions(ctx.model, ctx.org, session.userId, actions, session.kind);
      return { body: { status: 'SUCCESS' } };
    },
  },
  // ---- /__sandbox/ controls (not BILL) ----
  { area: 'control', method: 'GET', path: '/users', auth: 'none', handle: (ctx) => ({ body: ctx.org.users.all().map(publicUser) }) },
  {
    area: 'control',
    method: 'POST',
    path: '/users/:id/sync-tokens',
    auth: 'none',
    handle: (ctx) => {
      const name = obj(ctx.body).name;
      if (name !== undefined && (typeof name !== 'string' || !/^[A-Za-z0-9 _.-]{1,80}$/.test(name)))
        throw bdc(ctx.clock, 400, undefined, 'name must be 1-80 letters, digits, spaces, dots, dashes or underscores');
      if (!ctx.org.users.has(param(ctx, 'id'))) throw bdc(ctx.clock, 404, 'BDC_1205', 'No such user.');
      try {
        return { status: 201, body: createSyncToken(ctx.org, param(ctx, 'id'), name) };
      } catch (err) {
        throw bdc(ctx.clock, 400, undefined, err instanceof Error ? err.message : 'cannot create token');
      }
    },
  },
  {
    area: 'control',
    method: 'DELETE',
    path: '/users/:id/sync-tokens/:name',
    auth: 'none',
    handle: (ctx) => {
      const user = ctx.org.users.get(param(ctx, 'id'));
      if (!user) throw bdc(ctx.clock, 404, 'BDC_1205', 'No such user.');
      const before = user.syncTokens?.length ?? 0;
      user.syncTokens = (user.syncTokens ?? []).filter((t) => t.name !== ctx.params.name);
      // A revoked token ends the user's sync-token sessions (the sandbox does not track which token opened which).
      for (const s of [...ctx.gate.sessions.values()]) if (s.userId === user.id && s.kind === 'syncToken') ctx.gate.sessions.delete(s.id);
      return { body: { revoked: before - user.syncTokens.length } };
    },
  },
  {
    area: 'control',
    method: 'POST',
    path: '/bills/:id/approvers',
    auth: 'none',
    handle: (ctx) => {
      const userIds = obj(ctx.body).userIds;
      if (!Array.isArray(userIds) || !userIds.every((u) => typeof u === 'string'))
        throw bdc(ctx.clock, 400, undefined, 'userIds must be an array of user ids');
      return { body: assignApprovers(ctx.model, ctx.org, param(ctx, 'id'), userIds) };
    },
  },
  { area: 'control', method: 'GET', path: '/approvals/decisions', auth: 'none', handle: (ctx) => ({ body: ctx.org.approvalDecisions }) },
];
