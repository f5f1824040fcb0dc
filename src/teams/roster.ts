// Is a person a member of a team? The bot's own roster call (TeamsInfo.getTeamMember, GET /v3/conversations/{team}/
// members/{aadObjectId}) in the team's stored conversation, answered from a short, bounded cache: the dashboard tab
// asks on every load, and a roster answer stays true for minutes.
import { TeamsInfo, type CloudAdapter } from 'botbuilder';
import type { Clock } from '../infra/clock.js';
import { DependencyUnavailable } from '../errors.js';

/** A person removed from the team still sees the tab this long at most. */
const MEMBER_TTL_MS = 5 * 60_000;
/** A person just added waits this long at most for the tab to open. */
const NOT_MEMBER_TTL_MS = 60_000;
const MAX_ENTRIES = 10_000;

/** The connector's answer for someone outside the team (404 MemberNotFoundInConversation) or a bot no longer in it (403). */
function notInRoster(err: unknown): boolean {
  const e = err as { statusCode?: unknown; response?: { status?: unknown } } | undefined;
  const status = typeof e?.statusCode === 'number' ? e.statusCode : e?.response?.status;
  return status === 404 || status === 403;
}

/** Whether `aadObjectId` is in the team `teamId`, asked as the bot (`appId`) through the team's stored conversation reference. */
export function teamRoster(adapter: CloudAdapter, appId: string, clock: Clock) {
  const cache = new Map<string, { member: boolean; until: number }>();
  return async function isMember(reference: Record<string, unknown>, teamId: string, aadObjectId: string): Promise<boolean> {
    const key = `${teamId}|${aadObjectId.toLowerCase()}`;
    const now = clock.now();
    const kept = cache.get(key);
    if (kept && kept.until > now) return kept.member;
    // Filled in by the turn below: whether the roster lists the person, or what went wrong asking it.
    const answer: { member: boolean; failure?: unknown } = { member: false };
    await adapter.continueConversationAsync(appId, reference, async (context) => {
      // Caught here: the adapter's onTurnError would otherwise swallow it.
      try {
        await TeamsInfo.getTeamMember(context, teamId, aadObjectId);
        answer.member = true;
      } catch (err) {
        if (!notInRoster(err)) answer.failure = err;
      }
    });
    if (answer.failure !== undefined) throw new DependencyUnavailable('Teams roster', answer.failure);
    const { member } = answer;
    cache.delete(key);
    if (cache.size >= MAX_ENTRIES) {
      const [oldest] = cache.keys();
      if (oldest !== undefined) cache.delete(oldest);
    }
    cache.set(key, { member, until: now + (member ? MEMBER_TTL_MS : NOT_MEMBER_TTL_MS) });
    return member;
  };
}
