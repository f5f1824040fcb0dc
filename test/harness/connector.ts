// A local stand-in for the Bot Connector: records what the bot sends and answers like the real service.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { CardJson } from './cards.js';

/** Teams' limit for one bot message: 100 KB of the payload encoded in UTF-16. */
export const MAX_MESSAGE_UTF16_BYTES = 100 * 1024;

/**
 * What the bot sends the connector: an activity, or (createConversation) the parameters holding one. Every field is
 * optional (a test asserts the ones it needs); fields not named here read as `unknown`.
 */
interface ConnectorActivity {
  type?: string;
  id?: string;
  text?: string;
  summary?: string;
  replyToId?: string;
  conversation?: { id?: string; [key: string]: unknown };
  attachments?: Array<{ contentType?: string; content?: unknown }>;
  channelData?: { channel?: { id?: string }; [key: string]: unknown };
  activity?: ConnectorActivity;
  [key: string]: unknown;
}

export interface ConnectorCall {
  method: string;
  path: string;
  /** Decoded conversation id from the path, when the route has one. */
  conversationId?: string;
  /** Decoded activity id (replyToId for replies, id for updates). */
  activityId?: string;
  kind: 'reply' | 'send' | 'update' | 'delete' | 'createConversation' | 'teamDetails' | 'member' | 'other';
  /** The JSON object sent, if the body was one. */
  body?: ConnectorActivity;
  /** The body as sent. */
  raw: string;
  headers: IncomingMessage['headers'];
  at: number;
  /** Status the stand-in answered. */
  status: number;
}

export interface ScriptedResponse {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/** Decides an answer for a call; undefined means the normal 200/201. */
export type ConnectorScript = (call: ConnectorCall) => ScriptedResponse | undefined;

export class ConnectorStandIn {
  readonly calls: ConnectorCall[] = [];
  private readonly events = new EventEmitter();
  private readonly server: Server;
  private scripts: ConnectorScript[] = [];
  url = '';
  /** Team details answered for GET /v3/teams/{id}. */
  teams = new Map<string, { id: string; name: string; aadGroupId: string }>();
  /**
   * Rosters by conversation (team) id, as Entra object ids: GET /v3/conversations/{id}/members/{member} answers 404
   * MemberNotFoundInConversation for anyone not listed. A conversation without a roster here answers everyone.
   */
  rosters = new Map<string, Set<string>>();

  constructor() {
    this.events.setMaxListeners(1000);
    this.server = createServer((req, res) => void this.handle(req, res));
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

  /** Adds a script consulted (first match wins) before the default answer. */
  script(fn: ConnectorScript): () => void {
    this.scripts.push(fn);
    return () => {
      this.scripts = this.scripts.filter((s) => s !== fn);
    };
  }

  /** Answers the next `times` sends/replies (optionally for one conversation) with the given response. */
  failSends(times: number, response: ScriptedResponse, conversationId?: string): void {
    let left = times;
    this.script((call) => {
      if (left <= 0) return undefined;
      if (call.kind !== 'reply' && call.kind !== 'send') return undefined;
      if (conversationId && call.conversationId !== conversationId) return undefined;
      left--;
      return response;
    });
  }

  /** Messages (not typing) the bot delivered with 2xx, optionally in one conversation. */
  messages(conversationId?: string): ConnectorCall[] {
    return this.calls.filter(
      (c) =>
        (c.kind === 'reply' || c.kind === 'send') &&
        c.status < 300 &&
        c.body?.type === 'message' &&
        (!conversationId || c.conversationId === conversationId),
    );
  }

  /** The Adaptive Card of a delivered message; throws when the message carries none. */
  static card(call: ConnectorCall): CardJson {
    const card = call.body?.attachments?.find((a) => a.contentType === 'application/vnd.microsoft.card.adaptive')?.content;
    if (!card || typeof card !== 'object') throw new Error(`no Adaptive Card in ${call.kind} ${call.path}: ${call.raw.slice(0, 300)}`);
    return card as CardJson;
  }

  /** Resolves when `predicate` over all calls so far returns a truthy value; rejects after timeoutMs. */
  waitFor<T>(predicate: (calls: ConnectorCall[]) => T | undefined | false, timeoutMs = 10_000, what = 'connector calls'): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const check = () => {
        const v = predicate(this.calls);
        if (v) {
          cleanup();
          resolve(v);
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${what}; saw ${this.calls.length} calls: ${this.calls.map((c) => `${c.kind}:${c.status}`).join(', ')}`,
          ),
        );
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.events.off('call', check);
      };
      this.events.on('call', check);
      check();
    });
  }

  /** Waits for n delivered messages in a conversation (or overall). */
  waitForMessages(n: number, conversationId?: string, timeoutMs = 10_000): Promise<ConnectorCall[]> {
    return this.waitFor(
      () => {
        const m = this.messages(conversationId);
        return m.length >= n ? m : undefined;
      },
      timeoutMs,
      `${n} message(s)${conversationId ? ' in ' + conversationId : ''}`,
    );
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: ConnectorActivity | undefined;
    try {
      const parsed: unknown = raw ? JSON.parse(raw) : undefined;
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as ConnectorActivity;
    } catch {
      // not JSON: `raw` keeps it
    }
    const url = new URL(req.url ?? '/', 'http://x');
    const seg = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const call: ConnectorCall = {
      method: req.method ?? 'GET',
      path: url.pathname,
      kind: 'other',
      body,
      raw,
      headers: req.headers,
      at: Date.now(),
      status: 200,
    };
    if (seg[0] === 'v3' && seg[1] === 'conversations') {
      call.conversationId = seg[2];
      if (seg.length === 2 && req.method === 'POST') call.kind = 'createConversation';
      else if (seg[3] === 'activities' && req.method === 'POST') {
        call.kind = seg[4] ? 'reply' : 'send';
        call.activityId = seg[4];
      } else if (seg[3] === 'activities' && req.method === 'PUT') {
        call.kind = 'update';
        call.activityId = seg[4];
      } else if (seg[3] === 'activities' && req.method === 'DELETE') {
        call.kind = 'delete';
        call.activityId = seg[4];
      } else if (seg[3] === 'members' || seg[3] === 'pagedmembers') call.kind = 'member';
    } else if (seg[0] === 'v3' && seg[1] === 'teams') {
      call.kind = 'teamDetails';
    }
    let response: ScriptedResponse | undefined;
    for (const s of this.scripts) {
      response = s(call);
      if (response) break;
    }
    response ??= this.defaultResponse(call, seg);
    call.status = response.status;
    this.calls.push(call);
    res.writeHead(response.status, { 'content-type': 'application/json', ...response.headers });
    res.end(response.body === undefined ? '' : JSON.stringify(response.body));
    this.events.emit('call');
  }

  private defaultResponse(call: ConnectorCall, seg: string[]): ScriptedResponse {
    switch (call.kind) {
      case 'reply':
      case 'send':
      case 'update':
        // Teams refuses a bot message over 100 KB, counted as the whole payload in UTF-16 (shared/reference/teams-bot.md).
        if (call.raw.length * 2 > MAX_MESSAGE_UTF16_BYTES)
          return { status: 413, body: { error: { code: 'MessageSizeTooBig', message: 'Message size is too big' } } };
        return { status: 200, body: { id: call.kind === 'update' ? call.activityId : `act-${randomUUID()}` } };
      case 'delete':
        return { status: 200, body: {} };
      case 'createConversation':
        return {
          status: 201,
          body: { id: `${call.body?.channelData?.channel?.id ?? 'conv'};messageid=${Date.now()}`, activityId: randomUUID() },
        };
      case 'teamDetails': {
        const t = this.teams.get(seg[2] ?? '');
        return t ? { status: 200, body: t } : { status: 404, body: { error: { code: 'NotFound', message: 'Team not found' } } };
      }
      case 'member': {
        const roster = this.rosters.get(seg[2] ?? '');
        if (roster && seg[3] === 'members' && !roster.has((seg[4] ?? '').toLowerCase()))
          return {
            status: 404,
            body: { error: { code: 'MemberNotFoundInConversation', message: 'The member was not found in the conversation' } },
          };
        return { status: 200, body: { id: seg[4] ?? '29:user', name: 'Test User', aadObjectId: '00000000-0000-0000-0000-0000000000aa' } };
      }
      default:
        return { status: 404, body: { error: { code: 'NotFound', message: 'No such route in the connector stand-in' } } };
    }
  }
}
