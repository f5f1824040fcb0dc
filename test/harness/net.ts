// Free local ports, and HTTP helpers for talking to the bot like the Bot Framework does.
import { createServer } from 'node:net';
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

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
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
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}
