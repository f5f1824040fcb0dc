// Approval cards as kept server-side (NS.approvalCards), and signed button data: a click is checked against the record
// and the signature, never against what the card carries back.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { deriveKey } from '../../infra/state/sealing.js';
import type { ConversationKind } from '../types.js';

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
  // `sig` as the click brought it back: anything but a string of at most 128 characters does not verify.
  const verify = (sig: unknown, ...parts: string[]): boolean => {
    const want = Buffer.from(sign(...parts));
    const got = Buffer.from(dataString(sig, 128) ?? '');
    return got.length === want.length && timingSafeEqual(got, want);
  };
  return { sign, verify };
}
