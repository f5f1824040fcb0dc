// The Bot Connector stand-in both bots reply to in the bench: answers like the real service (200 + an activity id)
// and keeps only what the bench reads (per conversation: the reply's summary or text, when it arrived). The test
// harness's stand-in keeps every body and header and re-scans them on each call, which is right for tests and too
// heavy for tens of thousands of replies.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { field, list, text } from './json.js';

export interface Reply {
  /** performance.timeOrigin + performance.now() when the reply arrived. */
  at: number;
  /** The activity's summary (cards) or text. */
  summary: string;
  /** The card's first TextBlock, when it has one (e.g. "BILL is busy"). */
  title: string | undefined;
}

export class BenchConnector {
  private readonly server: Server;
  /** Message replies by conversation id (the first one; the bench sends one command per thread). */
  readonly replies = new Map<string, Reply>();
  private readonly waiters = new Map<string, Array<(r: Reply) => void>>();
  counts = { messages: 0, typing: 0, other: 0 };
  url = '';
  private seq = 0;

  constructor() {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 30_000;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Forget replies seen so far (between scenarios). */
  clear(): void {
    this.replies.clear();
    this.counts = { messages: 0, typing: 0, other: 0 };
  }

  /** Resolves with the reply in this conversation (at once if it came already). */
  reply(conversationId: string): Promise<Reply> {
    const r = this.replies.get(conversationId);
    if (r) return Promise.resolve(r);
    return new Promise((resolve) => {
      const list = this.waiters.get(conversationId) ?? [];
      list.push(resolve);
      this.waiters.set(conversationId, list);
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const at = performance.timeOrigin + performance.now();
    const [path = '/'] = (req.url ?? '/').split('?');
    const [v3, conversations, conversationId, activities] = path.split('/').filter(Boolean).map(decodeURIComponent);
    if (
      v3 === 'v3' &&
      conversations === 'conversations' &&
      conversationId !== undefined &&
      activities === 'activities' &&
      req.method === 'POST'
    ) {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      const type = field(body, 'type');
      if (type === 'typing') this.counts.typing++;
      else if (type === 'message') {
        this.counts.messages++;
        if (!this.replies.has(conversationId)) {
          const reply: Reply = {
            at,
            summary: text(body, 'summary') ?? text(body, 'text') ?? '',
            title: cardTitle(body),
          };
          this.replies.set(conversationId, reply);
          const waiting = this.waiters.get(conversationId);
          if (waiting) {
            this.waiters.delete(conversationId);
            for (const w of waiting) w(reply);
          }
        }
      } else this.counts.other++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: `act-${++this.seq}` }));
      return;
    }
    this.counts.other++;
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 'NotFound', message: 'No such route in the bench connector' } }));
  }
}

/** The text of the first TextBlock of the activity's Adaptive Card, when it has one. */
function cardTitle(activity: unknown): string | undefined {
  const attachment = list(field(activity, 'attachments')).find(
    (a) => field(a, 'contentType') === 'application/vnd.microsoft.card.adaptive',
  );
  const first = list(field(field(attachment, 'content'), 'body')).find((b) => field(b, 'type') === 'TextBlock');
  return text(first, 'text');
}
