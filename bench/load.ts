// Drives /api/messages over real HTTP (undici, bounded in-flight requests) with Teams-shaped channel activities
// from many people in many channels, each command in its own thread, as a busy organisation's traffic looks.
import { Pool } from 'undici';
import { channelMessage, installationUpdate, TENANT } from '../test/harness/activities.js';

export const now = (): number => performance.timeOrigin + performance.now();

export interface Person {
  id: string;
  name: string;
  aadObjectId: string;
}

/** Person number i of the bench's organisation (stable ids: the per-person rate limit keys on them). */
export function person(i: number): Person {
  const hex = i.toString(16).padStart(12, '0');
  return { id: `29:bench-user-${i}`, name: `Bench Person ${i}`, aadObjectId: `b0000000-0000-4000-8000-${hex}` };
}

export interface Place {
  team: string;
  channel: string;
}

/** Channel c of team t. */
export function place(t: number, c: number): Place {
  return { team: `19:bench-team-${t}@thread.tacv2`, channel: `19:bench-team-${t}-channel-${c}@thread.tacv2` };
}

/**
 * The k-th of `channels` channels (5 per team). Teams limits what a bot sends per channel (7 a second, 8 in 2 s,
 * 60 in 30 s, 1,800 an hour; a channel's reply threads share its budget) and billbridge keeps to it, so a load
 * is spread over as many channels as it needs to stay within those limits, as many busy channels would.
 */
export function channel(k: number, channels: number): Place {
  const i = k % channels;
  return place(Math.floor(i / 5), i % 5);
}

export interface Command {
  text: string;
  who: Person;
  where: Place;
  /** The Refresh button of the card `text` answered, clicked (Action.Submit: a message carrying the button's data). */
  refresh?: boolean;
}

/** Each command starts its own thread: the conversation id the reply comes back on is unique to it. */
export function commandActivity(
  cmd: Command,
  id: string,
  serviceUrl: string,
): { activity: Record<string, unknown>; conversationId: string } {
  const where = { serviceUrl, team: cmd.where.team, channel: cmd.where.channel, tenant: TENANT, from: cmd.who, id, threadId: id };
  const activity = cmd.refresh
    ? channelMessage('', { ...where, noMention: true, value: { verb: 'run', command: cmd.text, refresh: true } })
    : channelMessage(cmd.text, where);
  return { activity, conversationId: activity.conversation.id };
}

/** The bot installed in team number t (what Teams sends on install); the welcome goes to the team's conversation. */
export function installActivity(t: number, serviceUrl: string): Record<string, unknown> {
  return installationUpdate('add', { serviceUrl, name: `bench-install-${t}` });
}

export interface Sent {
  status: number;
  /** ms since the epoch (sub-ms). */
  start: number;
  end: number;
  error?: string;
}

/** One keep-alive connection pool to a bot's /api/messages. */
export class BotClient {
  private readonly pool: Pool;
  private readonly path = '/api/messages';

  constructor(
    readonly baseUrl: string,
    connections: number,
  ) {
    this.pool = new Pool(baseUrl, { connections, pipelining: 1, keepAliveTimeout: 30_000, headersTimeout: 120_000, bodyTimeout: 120_000 });
  }

  async post(activity: unknown): Promise<Sent> {
    const body = JSON.stringify(activity);
    const start = now();
    try {
      const res = await this.pool.request({ path: this.path, method: 'POST', body, headers: { 'content-type': 'application/json' } });
      await res.body.dump();
      return { status: res.statusCode, start, end: now() };
    } catch (err) {
      return { status: 0, start, end: now(), error: err instanceof Error ? err.message : String(err) };
    }
  }

  /**
   * Opens up to n keep-alive connections (n GET /healthz at once) before a burst, as a Bot Connector that has been
   * talking to the bot holds its connections open: the burst then measures the bot, not a storm of TCP handshakes.
   */
  async connect(n: number): Promise<void> {
    await Promise.all(
      Array.from({ length: n }, async () => {
        const res = await this.pool.request({ path: '/healthz', method: 'GET' });
        await res.body.dump();
      }),
    );
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

export interface ClosedLoopResult {
  /** Latencies (ms) of the requests that finished inside the measured window. */
  latencies: number[];
  completed: number;
  errors: number;
  elapsedMs: number;
}

/**
 * `concurrency` workers, each sending its next activity as soon as the previous one was answered, for `durationMs`.
 * Throughput is completed requests over the elapsed time.
 */
export async function closedLoop(
  client: BotClient,
  concurrency: number,
  durationMs: number,
  make: () => unknown,
): Promise<ClosedLoopResult> {
  const latencies: number[] = [];
  let errors = 0;
  const started = now();
  const stopAt = started + durationMs;
  const worker = async () => {
    while (now() < stopAt) {
      const sent = await client.post(make());
      if (sent.status !== 200) errors++;
      else latencies.push(sent.end - sent.start);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsedMs = now() - started;
  return { latencies, completed: latencies.length, errors, elapsedMs };
}
