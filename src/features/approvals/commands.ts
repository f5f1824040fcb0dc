// `approvals`: the bills waiting for the asking person, read in their own BILL session, with Approve / Deny for them
// alone. `approvals digest daily <HH:MM> | off`: a personal message with those bills every day they are some.
import { InputError, NotBound, NotLinked } from '../../errors.js';
import { nextSlot, parseTime } from '../../notify/schedule.js';
import type { Command, CommandContext } from '../types.js';
import { approvalsOffCard, chooseOrgCard, digestSettingCard } from './cards.js';
import { personOf } from './connect.js';
import type { Approvals } from './service.js';
import type { ApprovalsDeps } from './connect.js';
import type { UserLink } from './userLinks.js';

/**
 * The person's link for this conversation: the conversation's org; in a personal chat bound to none, their only link
 * (or the one named). Undefined means "ask which": several links and none named.
 */
async function linkFor(approvals: Approvals, ctx: CommandContext, named?: string): Promise<UserLink[] | UserLink> {
  const person = personOf(ctx);
  if (ctx.orgId) {
    const link = await approvals.links.get({ ...person, orgId: ctx.orgId });
    if (!link) throw new NotLinked();
    return link;
  }
  if (ctx.scope.kind !== 'personal') throw new NotBound();
  const links = await approvals.links.forPerson(person.tenantId, person.aadObjectId);
  const [first, ...others] = links;
  if (!first) throw new NotLinked();
  if (named) {
    const link = links.find((l) => l.orgId.toLowerCase() === named.toLowerCase());
    if (!link)
      throw new InputError(
        "You aren't connected to that organisation",
        'Type **approvals** to pick one you are connected to, or **connect** to add it.',
        named,
      );
    return link;
  }
  return others.length === 0 ? first : links;
}

export const approvalsCommand: Command<ApprovalsDeps> = {
  name: 'approvals',
  usage: 'approvals',
  description: 'Bills waiting for your approval in BILL, with Approve and Deny (after you connect)',
  examples: ['approvals'],
  upstream: true,
  rank: 30,
  async run(ctx, { approvals }) {
    if (!approvals) return approvalsOffCard();
    const args = ctx.input.args;
    if (args.length > 1 || (args.length === 1 && (ctx.scope.kind !== 'personal' || ctx.orgId))) {
      throw new InputError(
        '"approvals" takes nothing after it here',
        'Type **approvals** to see the bills waiting for you.',
        `approvals ${ctx.input.argText}`,
      );
    }
    const found = await linkFor(approvals, ctx, args[0]);
    if (Array.isArray(found)) return chooseOrgCard(found.map((l) => l.orgId));
    let link = found;
    // Teams ids and names can change; keep what cards and digests use current.
    if (link.teamsUserId !== ctx.caller.id || (ctx.caller.name && link.displayName !== ctx.caller.name)) {
      link = (await approvals.links.update(link, { teamsUserId: ctx.caller.id, displayName: ctx.caller.name ?? link.displayName })) ?? link;
    }
    const { reply } = await approvals.pendingReply(
      link,
      { kind: ctx.scope.kind, tenantId: ctx.scope.tenantId ?? link.tenantId, conversationId: ctx.scope.conversationId },
      { teamsUserId: ctx.caller.id, name: ctx.caller.name || link.displayName || 'you' },
      { locale: ctx.locale },
    );
    return reply;
  },
};

export const approvalsDigestCommand: Command<ApprovalsDeps> = {
  name: 'approvals digest',
  usage: 'approvals digest daily <HH:MM> | off',
  description: 'A personal message every day at that time with the bills waiting for your approval (only when some are)',
  examples: ['approvals digest daily 08:30', 'approvals digest off'],
  upstream: false,
  rank: 86,
  async run(ctx, { approvals }) {
    if (!approvals) return approvalsOffCard();
    const fmt = approvals.formatFor(ctx.locale);
    const { timeZone } = fmt;
    const hint = 'Type **approvals digest daily 08:30** (24-hour time, ' + timeZone + ') or **approvals digest off**.';
    const words = ctx.input.args.map((a) => a.toLowerCase());
    const found = await linkFor(approvals, ctx);
    const links = Array.isArray(found) ? found : [found];
    if (words.length === 0) {
      const time = links.find((l) => l.digestTime)?.digestTime;
      return digestSettingCard({
        time,
        timeZone,
        changed: false,
        nextDate: time ? nextSlot({ every: 'daily', time }, ctx.now.getTime(), timeZone).date : undefined,
        fmt,
      });
    }
    let time: string | undefined;
    if (words[0] === 'off' && words.length === 1) time = undefined;
    else if (words[0] === 'daily' && words.length >= 2) {
      time = parseTime(ctx.input.args.slice(1).join(' '));
      if (!time)
        throw new InputError(
          `I can't read "${ctx.input.args.slice(1).join(' ').slice(0, 30)}" as a time of day`,
          hint,
          `approvals digest ${ctx.input.argText}`,
        );
    } else throw new InputError('Which digest?', hint, `approvals digest ${ctx.input.argText}`);
    const since = ctx.now.getTime();
    for (const link of links) await approvals.links.update(link, { digestTime: time, digestSince: time ? since : undefined });
    ctx.log.info({ digest: time ?? 'off', links: links.length }, 'approvals digest set');
    return digestSettingCard({
      time,
      timeZone,
      changed: true,
      nextDate: time ? nextSlot({ every: 'daily', time }, since, timeZone).date : undefined,
      fmt,
    });
  },
};
