// Bot Connector calls under the connector.thread budget: every HTTP attempt of a turn (replies, typing, updates,
// deletes, roster and team look-ups, proactive sends) starts inside a limiter grant, and a 429 pauses the thread.
import { ActivityEventNames, ActivityTypes, type Middleware, type TurnContext } from 'botbuilder';
import type { Logger } from '../log.js';
import type { Limiter, Priority, Upstream } from '../limits/types.js';
import { isSharedClient } from '../http/turnClients.js';

/**
 * How long a send may wait for its thread's budget. A late reply beats none (the person sees nothing
 * otherwise, and an error card would need the same budget), but not forever.
 */
export const CONNECTOR_SEND_WAIT_MS = 60_000;

/** 429 without Retry-After: Teams asks for exponential backoff with jitter; botbuilder's pipeline does not retry it. */
const BACKOFF_MS = [1_000, 2_000, 4_000];

const POLICY_NAME = 'billbridgeConnectorLimits';

/** The parts of @azure/core-rest-pipeline this file touches (structural, so no direct dependency on it). */
interface PipelineResponse {
  status: number;
  headers: { get(name: string): string | undefined };
}
interface PipelineRequest {
  url: string;
}
interface PipelinePolicy {
  name: string;
  sendRequest(request: PipelineRequest, next: (request: PipelineRequest) => Promise<PipelineResponse>): Promise<PipelineResponse>;
}
interface Pipeline {
  addPolicy(policy: PipelinePolicy, options?: { afterPhase?: 'Retry' }): void;
  getOrderedPolicies(): Array<{ name: string }>;
}

export interface ConnectorLimitsDeps {
  limiter: Limiter;
  log: Logger;
  /** Waits between retries of a 429 without Retry-After (tests shorten them). */
  backoffMs?: number[];
  maxWaitMs?: number;
}

/**
 * Retry-After as milliseconds: seconds (possibly fractional), an HTTP date, or the retry-after-ms headers
 * Azure services also send. Undefined when absent or unreadable.
 */
export function retryAfterMs(headers: { get(name: string): string | undefined }, now = Date.now()): number | undefined {
  for (const name of ['retry-after-ms', 'x-ms-retry-after-ms']) {
    const v = Number(headers.get(name));
    if (headers.get(name) !== undefined && Number.isFinite(v) && v >= 0) return v;
  }
  const raw = headers.get('retry-after')?.trim();
  if (!raw) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.round(Number(raw) * 1000);
  const at = Date.parse(raw);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/** The conversation a connector URL addresses (.../v3/conversations/{id}/...; service URLs carry a path such as /amer/), if any. */
export function conversationOfUrl(url: string): string | undefined {
  try {
    const m = /\/v3\/conversations\/([^/]+)/.exec(new URL(url).pathname);
    return m ? decodeURIComponent(m[1]!) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The thread a connector URL's calls count against when the turn is not known: its conversation, else its path
 * (team look-ups, /v3/teams/{id}, count against that team).
 */
export function threadOfUrl(url: string): string {
  const conversation = conversationOfUrl(url);
  if (conversation !== undefined) return conversation;
  try {
    return decodeURIComponent(new URL(url).pathname);
  } catch {
    return url.slice(0, 200);
  }
}

function isProactive(context: TurnContext): boolean {
  return context.activity.type === ActivityTypes.Event && context.activity.name === ActivityEventNames.ContinueConversation;
}

function pipelineOf(connectorClient: unknown): Pipeline | undefined {
  // ConnectorClient (botbuilder-stdlib ServiceClientContext) keeps its @azure/core-client ServiceClient in `client`.
  const pipeline = (connectorClient as { client?: { pipeline?: Partial<Pipeline> } } | undefined)?.client?.pipeline;
  return pipeline && typeof pipeline.addPolicy === 'function' && typeof pipeline.getOrderedPolicies === 'function' ? (pipeline as Pipeline) : undefined;
}

/**
 * Adapter middleware. botbuilder builds a ConnectorClient per proactive continuation (inbound turns share kept
 * ones, see http/turnClients.ts); this adds a
 * pipeline policy after its retry policy, so each attempt (including the retries botbuilder makes on its own
 * for 429 with Retry-After and for 5xx) takes a slot of its thread's budget, and every 429 pauses that thread
 * for everyone. A 429 means Teams did not accept the message, so a retry never delivers it twice.
 */
export function connectorLimits(deps: ConnectorLimitsDeps): Middleware {
  const { limiter, log } = deps;
  const backoff = deps.backoffMs ?? BACKOFF_MS;
  const maxWaitMs = deps.maxWaitMs ?? CONNECTOR_SEND_WAIT_MS;
  let warned = false;

  /** `turnConversation` undefined: a client several turns share, whose calls count against the thread in their URL. */
  const policy = (priority: Priority, turnConversation: string | undefined): PipelinePolicy => ({
    name: POLICY_NAME,
    async sendRequest(request, next) {
      const upstream: Upstream = { service: 'connector', conversationId: turnConversation === undefined ? threadOfUrl(request.url) : (conversationOfUrl(request.url) ?? turnConversation) };
      for (let attempt = 0; ; attempt++) {
        const res = await limiter.run(upstream, { priority, maxWaitMs: priority === 'interactive' ? maxWaitMs : undefined }, () => next(request));
        if (res.status !== 429 && res.status !== 503) return res;
        const after = retryAfterMs(res.headers);
        if (res.status === 503 && after === undefined) return res;
        // With Retry-After botbuilder's retry policy waits and retries; our pause makes every other send to
        // this thread wait too. Without it, nobody would retry a 429: back off here.
        const pauseMs = after ?? backoff[attempt];
        if (pauseMs === undefined) return res;
        limiter.throttled(upstream, { kind: 'retryAfter', ms: pauseMs });
        log.info({ status: res.status, retryAfterMs: after, attempt }, 'Bot Connector throttled a send');
        if (after !== undefined) return res;
      }
    },
  });

  return {
    async onTurn(context: TurnContext, next: () => Promise<void>): Promise<void> {
      const priority: Priority = isProactive(context) ? 'background' : 'interactive';
      const turnConversation = context.activity.conversation?.id ?? '';
      const client = context.turnState.get(context.adapter.ConnectorClientKey) as unknown;
      const pipeline = pipelineOf(client);
      if (pipeline) {
        if (!pipeline.getOrderedPolicies().some((p) => p.name === POLICY_NAME)) {
          // A client kept for inbound turns (http/turnClients.ts) gets the policy once, from the first turn that uses
          // it, whatever activity that turn carried: every turn sharing it is a person's, and its calls count against
          // the thread they address.
          pipeline.addPolicy(isSharedClient(client) ? policy('interactive', undefined) : policy(priority, turnConversation), { afterPhase: 'Retry' });
        }
      } else {
        // A botbuilder whose connector client is shaped differently: limit whole sends instead of attempts.
        if (!warned) {
          warned = true;
          log.warn('Bot Connector client pipeline not found; limiting sends per call instead of per HTTP attempt');
        }
        const upstream: Upstream = { service: 'connector', conversationId: turnConversation };
        const opts = { priority, maxWaitMs: priority === 'interactive' ? maxWaitMs : undefined };
        context.onSendActivities((_ctx, _activities, nextSend) => limiter.run(upstream, opts, nextSend));
        context.onUpdateActivity((_ctx, _activity, nextUpdate) => limiter.run(upstream, opts, nextUpdate));
        context.onDeleteActivity((_ctx, _ref, nextDelete) => limiter.run(upstream, opts, nextDelete));
      }
      await next();
    },
  };
}
