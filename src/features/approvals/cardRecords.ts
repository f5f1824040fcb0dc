// Approval cards kept server-side (NS.approvalCards): which bills a card offers, to whom, in which conversation, and
// what was decided on it. A click is checked against this record, never against what the card carries back.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { deriveKey } from '../../infra/state/sealing.js';
import { whileHeld, withEditLock } from '../../infra/state/editLock.js';
import type { Clock } from '../../infra/clock.js';
import { NS, type StateStore } from '../../infra/state/types.js';
import type { ConversationKind } from '../types.js';

/** How long a card's buttons keep working. */
const APPROVAL_CARD_TTL_MS = 14 * 24 * 3_600_000;
/** A decision in flight holds its bill this long at most (double clicks, two devices, two instances). */
const DECISION_LOCK_MS = 2 * 60_000;

export type ApprovalAction = 'APPROVE' | 'DENY';

export interface ApprovalCardBill {
  billId: string;
  vendorName: string;
  amount: number;
  currency?: string;
  /** yyyy-MM-dd */
  dueDate: string;
  invoiceNumber?: string;
  /** byName: the approver's Teams display name. */
  decision?: { action: ApprovalAction; byName: string; at: number; comment?: string };
  /** No longer waiting on the approver when they clicked (decided in BILL, rerouted...). */
  gone?: boolean;
}

export interface ApprovalCardState {
  id: string;
  /** Lower case. */
  tenantId: string;
  /** The conversation the card went to; for channels without the ";messageid=" thread part. */
  conversationId: string;
  kind: ConversationKind;
  orgId: string;
  /** The only person whose clicks count. */
  approver: { aadObjectId: string; teamsUserId: string; name: string };
  bills: ApprovalCardBill[];
  /** Bills waiting beyond those on the card. */
  more: number;
  createdAt: number;
  updatedAt: number;
}

/** A string of button data, when it is one of at most `max` characters. */
export function dataString(v: unknown, max: number): string | undefined {
  return typeof v === 'string' && v.length > 0 && v.length <= max ? v : undefined;
}

/** HMAC of a button's data (its parts) under a key derived from SECRETS_KEY for `purpose`: data a client changed does not verify. */
export function buttonSigner(secretsKey: Buffer, purpose: string) {
  const key = deriveKey(secretsKey, purpose);
  const sign = (...parts: string[]): string =>
    createHmac('sha256', key)
      .update(['v1', ...parts].join('|'))
      .digest('base64url');
  const verify = (sig: string, ...parts: string[]): boolean => {
    const want = Buffer.from(sign(...parts));
    const got = Buffer.from(sig);
    return got.length === want.length && timingSafeEqual(got, want);
  };
  return { sign, verify };
}

export class ApprovalCards {
  constructor(
    private readonly store: StateStore,
    private readonly clock: Clock,
  ) {}

  async get(id: string): Promise<ApprovalCardState | undefined> {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) return undefined;
    const state = await this.store.get<ApprovalCardState>(NS.approvalCards, `card|${id}`);
    return state?.id === id ? state : undefined;
  }

  save(state: ApprovalCardState): Promise<void> {
    const left = Math.max(60_000, state.createdAt + APPROVAL_CARD_TTL_MS - this.clock.now());
    return this.store.set(NS.approvalCards, `card|${state.id}`, { ...state, updatedAt: this.clock.now() }, { ttlMs: left });
  }

  /**
   * Records what became of one bill on the card, one change at a time, so two bills decided at once both stay decided
   * (after ~2 s of waiting for a holder that died, the change is made anyway); once expired, on the clicked state.
   */
  async markBill(
    clicked: ApprovalCardState,
    billId: string,
    change: (bill: ApprovalCardBill) => ApprovalCardBill,
  ): Promise<ApprovalCardState> {
    const marked = async (state: ApprovalCardState) => {
      const next = { ...state, bills: state.bills.map((b) => (b.billId === billId ? change(b) : b)) };
      await this.save(next);
      return next;
    };
    const lease = { at: { ns: NS.approvalCards, key: `edit|${clicked.id}` } };
    const updated = await withEditLock({ store: this.store, clock: this.clock }, lease, async () => {
      const state = await this.get(clicked.id);
      return state && marked(state);
    });
    return updated ?? marked(clicked);
  }

  /** One decision at a time per bill of an org, whichever card it comes from: undefined, without running `fn`, when one is in flight. */
  deciding<T>(orgId: string, billId: string, fn: () => Promise<T>): Promise<T | undefined> {
    return whileHeld(this.store, this.clock, { ns: NS.approvalCards, key: `lock|${orgId}|${billId}` }, DECISION_LOCK_MS, fn);
  }
}
