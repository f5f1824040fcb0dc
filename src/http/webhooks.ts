// POST /api/bill/webhooks: BILL's signed notifications. What the headers can refuse is refused before the body is read
// (encoding, type, size, a signature header that cannot be BILL's, a sender out of budget: senderBudget.ts); then the
// body is read as raw bytes (the signature is over them; restify's bodyParser would re-encode), bounded in size.
import { on } from 'node:events';
import type { Request, Response, Server } from 'restify';
import type { Logger } from '../infra/log.js';
import type { Clock } from '../infra/clock.js';
import { errorMessage } from '../errors.js';
import type { WebhookReceiver } from '../notify/receiver.js';
import { SIGNATURE_HEADER, signatureDigest } from '../bill/webhooks.js';
import { isJsonContentType, sendJson } from './server.js';
import { senderBudget } from './senderBudget.js';

/** BILL's payloads are a few KB (one record; a bill with hundreds of JSON-escaped line items stays well under this). */
const WEBHOOK_BODY_LIMIT = 256 * 1024;
/** A client that sends its body this slowly is dropped. */
const READ_TIMEOUT_MS = 10_000;

/**
 * The request body as bytes, or undefined once it passes `limit` bytes (the rest is not read); a sender that goes away
 * or stalls past READ_TIMEOUT_MS throws.
 * @public also loaded by the kill -9 durability test's child process (a dynamic import knip cannot see)
 */
export async function readRawBody(req: Request, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  const stalled = new AbortController();
  const timer = setTimeout(() => stalled.abort(), READ_TIMEOUT_MS).unref();
  const data = on(req, 'data', { close: ['end'], signal: stalled.signal }) as AsyncIterable<[Buffer]>;
  // A request something paused (restify's body handling) does not flow again by itself when a listener is added.
  req.resume();
  try {
    for await (const [chunk] of data) {
      size += chunk.length;
      if (size > limit) return undefined;
      chunks.push(chunk);
    }
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks, size);
}

export function webhookRoute(receiver: Pick<WebhookReceiver, 'accept'>, log: Logger, clock: Clock): (server: Server) => void {
  const budget = senderBudget(clock);
  return (server) => {
    server.post('/api/bill/webhooks', async (req: Request, res: Response) => {
      // A refusal closes the connection: a body not read (or read only in part) is not drained either.
      const tooLarge = (declared: number | undefined) => {
        log.info({ limit: WEBHOOK_BODY_LIMIT, declared }, 'webhook refused: body too large');
        sendJson(res, 413, { error: `Body larger than ${WEBHOOK_BODY_LIMIT} bytes` }, true);
      };
      const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
      if (encoding !== 'identity') {
        sendJson(res, 415, { error: 'Content-Encoding is not supported' }, true);
        return;
      }
      if (!isJsonContentType(req)) {
        sendJson(res, 415, { error: 'Content-Type must be application/json' }, true);
        return;
      }
      const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
      if (declared !== undefined && declared > WEBHOOK_BODY_LIMIT) {
        tooLarge(declared);
        return;
      }
      if (!signatureDigest(req.headers[SIGNATURE_HEADER])) {
        log.info({ reason: req.headers[SIGNATURE_HEADER] === undefined ? 'no signature' : 'malformed signature' }, 'webhook refused');
        sendJson(res, 401, { status: 'refused', error: 'Missing or malformed x-bill-sha-signature' }, true);
        return;
      }
      const reservation = budget.reserve(req.socket.remoteAddress, declared, WEBHOOK_BODY_LIMIT);
      if ('retryAfterS' in reservation) {
        log.info({ retryAfterS: reservation.retryAfterS }, 'webhook refused: too many unverified bytes from this sender or in total');
        res.setHeader('Retry-After', String(reservation.retryAfterS));
        sendJson(res, 429, { status: 'retry', error: 'Too many requests' }, true);
        return;
      }
      // A body that is not read whole leaves whatever was reserved charged: the sender never showed a signature that verifies.
      let raw: Buffer | undefined;
      try {
        raw = await readRawBody(req, WEBHOOK_BODY_LIMIT);
      } catch (err) {
        log.info({ err: errorMessage(err) }, 'webhook body could not be read');
        if (!res.headersSent) sendJson(res, 400, { error: 'Body could not be read' }, true);
        return;
      }
      if (!raw) {
        tooLarge(declared);
        req.destroy();
        return;
      }
      try {
        const answer = await receiver.accept(raw, req.headers[SIGNATURE_HEADER]);
        // 401 is the receiver's answer to a signature that does not verify (or an organisation's key misused).
        if (answer.status === 401) budget.failedSender(reservation, raw.length);
        else if (answer.status < 300) budget.verifiedSender(reservation);
        else budget.release(reservation);
        sendJson(res, answer.status, answer.body);
      } catch (err) {
        budget.release(reservation);
        log.error({ err: errorMessage(err) }, 'webhook handling failed');
        if (!res.headersSent) sendJson(res, 503, { status: 'retry', error: 'Try again' });
      }
    });
  };
}
