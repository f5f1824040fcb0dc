// POST /api/bill/webhooks: BILL's signed notifications. The body is read here as raw bytes (the signature is over
// them; restify's bodyParser would decode and re-encode), bounded in size, then handed to the receiver.
import type { Request, Response, Server } from 'restify';
import type { Logger } from '../log.js';
import { errorMessage } from '../errors.js';
import type { WebhookReceiver } from '../notify/receiver.js';
import { SIGNATURE_HEADER } from '../bill/webhooks.js';

/** BILL's payloads are a few KB; anything near this is not a notification. */
export const WEBHOOK_BODY_LIMIT = 1024 * 1024;
/** A client that sends its body this slowly is dropped. */
const READ_TIMEOUT_MS = 10_000;

class BodyTooLarge extends Error {}
class BodyAborted extends Error {}

/** The request body as bytes, refusing more than `limit` bytes (without reading them all) and stalled senders. */
export function readRawBody(req: Request, limit: number, timeoutMs = READ_TIMEOUT_MS): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new BodyTooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
      if (err) reject(err);
      else resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        finish(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => finish();
    const onError = (err: Error) => finish(err);
    const onAborted = () => finish(new BodyAborted());
    const timer = setTimeout(() => finish(new BodyAborted()), timeoutMs);
    timer.unref();
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
    req.resume();
  });
}

function send(res: Response, status: number, body: unknown, close = false): void {
  if (close) res.setHeader('Connection', 'close');
  res.status(status);
  res.json(body);
}

/** Registers the route on the server (createHttpServer's `routes` option). */
export function webhookRoute(receiver: WebhookReceiver, log: Logger, limit = WEBHOOK_BODY_LIMIT): (server: Server) => void {
  return (server) => {
    server.post('/api/bill/webhooks', async (req: Request, res: Response) => {
      const encoding = String(req.headers['content-encoding'] ?? 'identity').toLowerCase();
      if (encoding !== 'identity') {
        return send(res, 415, { error: 'Content-Encoding is not supported' }, true);
      }
      let raw: Buffer;
      try {
        raw = await readRawBody(req, limit);
      } catch (err) {
        if (err instanceof BodyTooLarge) {
          log.info({ limit, declared: req.headers['content-length'] }, 'webhook refused: body too large');
          // The rest of the body is not read: close the connection after answering.
          send(res, 413, { error: `Body larger than ${limit} bytes` }, true);
          req.destroy();
          return;
        }
        log.info({ err: errorMessage(err) }, 'webhook body could not be read');
        if (!res.headersSent) send(res, 400, { error: 'Body could not be read' }, true);
        return;
      }
      try {
        const answer = await receiver.accept(raw, req.headers[SIGNATURE_HEADER]);
        send(res, answer.status, answer.body);
      } catch (err) {
        log.error({ err: errorMessage(err) }, 'webhook handling failed');
        if (!res.headersSent) send(res, 503, { status: 'retry', error: 'Try again' });
      }
    });
  };
}
