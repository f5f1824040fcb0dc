// BILL webhook notifications: the signature check and payload parsing, before anything trusts a byte of them.
//
// Facts (developer.bill.com /docs/test-with-webhook-security, /docs/bill-webhook-notification-payloads,
// /docs/notification-payloads-reference; shared/reference/bill-v3-api.md §5):
// - header `x-bill-sha-signature` = base64 HMAC-SHA256 of the notification body, keyed with the subscription's
//   securityKey; computed here over the raw request bytes (never re-serialised JSON), compared in constant time;
// - body `{ metadata: { eventId, subscriptionId, organizationId, eventType, version }, <entity>: {...} }`, which the
//   docs warn may arrive JSON-escaped as a JSON string; autopay.failed adds a top-level `errors` array;
// - payment.updated carries `billIds` and the single-status value in `status` (the API's Payment shape has
//   `billPayments` and `singleStatus`; both are read).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

export const SIGNATURE_HEADER = 'x-bill-sha-signature';

/** HMAC-SHA256 output length. */
const DIGEST_BYTES = 32;

/** The signature header as digest bytes, or undefined (401 without trying any key) when it cannot be a BILL signature. */
export function signatureDigest(header: string | string[] | undefined): Buffer | undefined {
  if (typeof header !== 'string') return undefined;
  const s = header.trim();
  // 32 bytes are 44 base64 characters with one '=' of padding; base64url spelling is accepted too.
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(s)) return undefined;
  const bytes = Buffer.from(s.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return bytes.length === DIGEST_BYTES ? bytes : undefined;
}

/** True when `digest` (from signatureDigest) is the HMAC of `raw` under `securityKey`; constant time. */
export function signatureMatches(raw: Buffer, digest: Buffer, securityKey: string): boolean {
  if (!securityKey || digest.length !== DIGEST_BYTES) return false;
  const expected = createHmac('sha256', securityKey).update(raw).digest();
  return timingSafeEqual(expected, digest);
}

/** Ids and type names BILL sends are short (anything longer is not a BILL notification) and printable ASCII only: they
 * become store keys and log fields. A number is read as its digits. */
const PRINTABLE = /^[\x21-\x7e]{1,200}$/;
const Field = z.union([z.string(), z.number().finite().transform(String)]).pipe(z.string().trim().regex(PRINTABLE));
const Metadata = z.object({ eventId: Field, subscriptionId: Field, organizationId: Field, eventType: Field, version: Field });

export interface BillNotification {
  metadata: z.infer<typeof Metadata>;
  /** The payload key of the record: bill, invoice, payment, vendor, autopay, transaction... */
  entityKey: string | undefined;
  entity: Record<string, unknown>;
  /** autopay.failed (and any event that carries one): what BILL says went wrong. */
  errors: Array<{ code?: string; message?: string }>;
}

type ParseResult = { ok: true; notification: BillNotification } | { ok: false; problem: string };

/** Drops keys that could pollute prototypes before anything reads the object. */
const reviver = (key: string, value: unknown): unknown => (['__proto__', 'constructor', 'prototype'].includes(key) ? undefined : value);

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Only the metadata, for finding the subscription whose key must verify the body. Never trusted beyond that. */
export function peekSubscriptionId(raw: Buffer): string | undefined {
  const body = parseBody(raw);
  return typeof body !== 'string' && isRecord(body.metadata) ? Field.safeParse(body.metadata.subscriptionId).data : undefined;
}

/** The body as a JSON object (after a byte-order mark, or JSON-escaped in a string as BILL's docs warn), or what is wrong. */
function parseBody(raw: Buffer): Record<string, unknown> | string {
  let value: unknown = raw.toString('utf8').replace(/^\ufeff/, '');
  for (let depth = 0; depth < 2 && typeof value === 'string'; depth++) {
    try {
      value = JSON.parse(value, reviver);
    } catch {
      // Syntax errors, and RangeError for absurdly deep nesting.
      return depth === 0 ? 'body is not JSON' : 'string body does not hold JSON';
    }
  }
  return isRecord(value) ? value : 'body is not a JSON object';
}

/** Parses a notification whose signature has been verified: JSON or a JSON string holding JSON. */
export function parseNotification(raw: Buffer): ParseResult {
  const body = parseBody(raw);
  if (typeof body === 'string') return { ok: false, problem: body };
  if (!isRecord(body.metadata)) return { ok: false, problem: 'metadata is missing' };
  const metadata = Metadata.safeParse(body.metadata);
  if (!metadata.success) return { ok: false, problem: `metadata.${metadata.error.issues[0]?.path[0]} is missing or malformed` };
  const [entityKey, entity] = Object.entries(body).find(([k, v]) => k !== 'metadata' && k !== 'errors' && isRecord(v)) ?? [];
  const errors = Array.isArray(body.errors)
    ? body.errors
        .filter(isRecord)
        .slice(0, 5)
        .map((e) => ({
          code: typeof e.code === 'string' || typeof e.code === 'number' ? String(e.code).slice(0, 40) : undefined,
          message: typeof e.message === 'string' ? e.message.slice(0, 300) : undefined,
        }))
    : [];
  const notification = {
    metadata: metadata.data,
    entityKey: entityKey?.slice(0, 60),
    entity: (entity ?? {}) as Record<string, unknown>,
    errors,
  };
  return { ok: true, notification };
}
