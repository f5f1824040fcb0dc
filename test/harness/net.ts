// Free local ports, and HTTP helpers for talking to the bot like the Bot Framework does.
import { createServer } from 'node:net';
import { request as httpRequest } from 'node:http';
import { request } from 'undici';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** A parsed JSON body as tests read it: any field may be missing, so each reads as `unknown` until asserted. */
export type JsonRecord = Record<string, unknown>;

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The parsed body; undefined when empty or not JSON (an array answer comes through as the array). */
  json: JsonRecord | undefined;
}

/** `text` parsed as JSON, or undefined when it is empty or not JSON. */
function parseJson(text: string): JsonRecord | undefined {
  try {
    return text ? (JSON.parse(text) as JsonRecord) : undefined;
  } catch {
    return undefined;
  }
}

export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<HttpAnswer> {
  const raw = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const res = await request(url, { method: 'POST', body: raw, headers: { 'content-type': 'application/json', ...headers } });
  return answer(res);
}

export async function get(url: string, headers: Record<string, string> = {}): Promise<HttpAnswer> {
  return answer(await request(url, { method: 'GET', headers }));
}

async function answer(res: Awaited<ReturnType<typeof request>>): Promise<HttpAnswer> {
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: parseJson(text) };
}

/**
 * POSTs headers only and never sends the body they announce; resolves with the answer the server gives without
 * reading it (a server that waits for the body never answers). The socket is destroyed after the answer.
 */
export function headersOnly(
  url: string,
  headers: Record<string, string>,
  opts: { localAddress?: string } = {},
): Promise<{ status: number; body: JsonRecord | string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers, localAddress: opts.localAddress });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body: parseJson(text) ?? text });
      });
    });
    req.on('error', reject);
    req.flushHeaders();
  });
}

/** POSTs JSON from a given local source address (Linux routes all of 127/8 locally: one "sender" per address). */
export function postFrom(
  localAddress: string,
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, {
      method: 'POST',
      localAddress,
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(raw)), ...headers },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    // A refusal before the body is read may close the connection while the body is still being written.
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)));
    req.end(raw);
  });
}
