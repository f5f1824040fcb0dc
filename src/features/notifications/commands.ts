// `subscribe`, `unsubscribe`, `subscriptions` and `digest` in a team channel, and the admin's `webhooks`: which BILL
// events a channel hears about, its scheduled digest, and the BILL webhook subscription that feeds them all.
import { Forbidden, InputError } from '../../errors.js';
import { boundOrg, formatOf } from '../finance.js';
import { describeSchedule, nextSlot, parseDigestArgs, type DigestSchedule } from '../../notify/schedule.js';
import { KINDS, parseKinds, SUBSCRIPTION_KINDS, type SubscriptionKind } from '../../notify/kinds.js';
import { WEBHOOK_PATH, WebhookSetupError } from '../../notify/setup.js';
import type { Notifications } from '../../notify/index.js';
import type { ChannelTarget, ConversationRef } from '../../notify/types.js';
import { adaptiveCard, clipped, escapeMarkdown, executeAction, facts, text, title, type CardElement } from '../../cards/card.js';
import { digestCard, scheduleIn } from './cards.js';
import { dateTime } from '../../cards/format.js';
import { auditAdmin, auditOrUndo } from '../audit.js';
import type { AccessPolicy } from '../access.js';
import type { AuditTrail } from '../../infra/audit.js';
import type { Installations } from '../../bindings/installations.js';
import { conversationOf, type Command, type CommandContext } from '../types.js';

interface NotificationsDeps {
  notify: Pick<Notifications, 'subscriptions' | 'composeDigest' | 'keys' | 'setup'>;
  /** Where the bot is installed: the bot's Teams id for the channel's posts. */
  installs: Pick<Installations, 'forScope'>;
  access: Pick<AccessPolicy, 'isAdmin'>;
  audit: Pick<AuditTrail, 'admin'>;
  settings: {
    locale: string;
    timeZone: string;
    note: string | undefined;
    /** MicrosoftAppId ('' in local mode). */
    appId: string;
    /** PUBLIC_HOSTNAME: the default webhook URL of `webhooks setup`. */
    publicHostname: string | undefined;
    /** BILL_WEBHOOK_SECURITY_KEY is set: events signed with it are accepted without a stored key. */
    envWebhookKey: boolean;
  };
}

const KINDS_HINT = `Type **subscribe** and one or more of: ${SUBSCRIPTION_KINDS.join(', ')}, or **all**. For example **subscribe payments bills**.`;

/** The channel a command was typed in (channel scopes only). */
export function channelTargetOf(scope: CommandContext['scope']): ChannelTarget | undefined {
  if (scope.kind !== 'channel' || !scope.teamId) return undefined;
  const channelId = scope.channelId ?? conversationOf(scope.conversationId);
  if (!channelId || !scope.tenantId) return undefined;
  return { tenantId: scope.tenantId.toLowerCase(), teamId: scope.teamId, channelId };
}

function channelOf(ctx: CommandContext): ChannelTarget {
  const target = channelTargetOf(ctx.scope);
  if (!target)
    throw new InputError("I can't tell which channel this is", 'Type the command in the team channel that should get the cards.');
  return target;
}

/** The reference posts go out with: the channel's top level (not the command's thread), Teams' service URL, the bot's id. */
async function referenceFor(ctx: CommandContext, deps: NotificationsDeps, target: ChannelTarget): Promise<ConversationRef> {
  const record = await deps.installs.forScope(ctx.scope).catch(() => undefined);
  const stored = record?.reference.bot as { id?: unknown; name?: unknown } | undefined;
  const name = typeof stored?.name === 'string' && stored.name ? { name: stored.name } : {};
  const appId = deps.settings.appId;
  const bot = typeof stored?.id === 'string' ? { id: stored.id, ...name } : appId ? { id: `28:${appId}` } : undefined;
  return {
    channelId: 'msteams',
    serviceUrl: ctx.scope.serviceUrl,
    conversation: { id: target.channelId, isGroup: true, conversationType: 'channel', tenantId: target.tenantId },
    ...(bot ? { bot } : {}),
  };
}

/** A card that only says one thing: a title, a sentence and its summary. */
const notice = (heading: string, words: string, summary: string) => adaptiveCard([title(heading), text(words)], { summary });

function subscribedText(kinds: readonly SubscriptionKind[]): string {
  return `This channel gets a card when BILL reports a change to:\n${kinds.map((k) => `- ${KINDS[k].label}`).join('\n')}`;
}

/** A warning when nothing feeds the subscriptions yet (no BILL webhook subscription billbridge can verify). */
async function webhookWarning(deps: NotificationsDeps, orgId: string): Promise<CardElement[]> {
  if (deps.settings.envWebhookKey || (await deps.notify.keys.list(orgId)).length > 0) return [];
  return [
    text(
      'BILL is not sending events to billbridge yet. A billbridge admin sets that up once with **webhooks setup**; until then nothing arrives here.',
    ),
  ];
}

const subscribeCommand: Command<NotificationsDeps> = {
  name: 'subscribe',
  usage: 'subscribe <bills | invoices | payments | vendors | spend | all>',
  description: 'Post a card in this channel when BILL bills, invoices, payments, vendors or spend change',
  examples: ['subscribe payments', 'subscribe bills invoices', 'subscribe all'],
  scopes: ['channel'],
  upstream: false,
  rank: 50,
  async run(ctx, deps) {
    const n = deps.notify;
    const target = channelOf(ctx);
    const orgId = boundOrg(ctx);
    if (ctx.input.args.length === 0) throw new InputError('Subscribe to what?', KINDS_HINT);
    const kinds = parseKinds(ctx.input.args);
    if (!kinds || kinds.length === 0)
      throw new InputError(`I can't subscribe to "${ctx.input.argText.slice(0, 60)}"`, KINDS_HINT, `subscribe ${ctx.input.argText}`);
    const reference = await referenceFor(ctx, deps, target);
    const added = await n.subscriptions.add(target, kinds, reference);
    await auditOrUndo(auditAdmin(deps.audit, ctx, 'subscribe', 'ok', orgId, { kinds, added }), () => n.subscriptions.remove(target, added));
    ctx.log.info({ orgId, added }, 'channel subscribed');
    const all = (await n.subscriptions.forChannel(target)).map((s) => s.kind);
    const body: CardElement[] = [
      title(added.length > 0 ? 'Subscribed' : 'Already subscribed'),
      text(subscribedText(all)),
      ...(await webhookWarning(deps, orgId)),
      text('Type **unsubscribe** to stop, or **digest daily 09:00** for a morning summary.', { subtle: true }),
      ...(deps.settings.note ? [text(deps.settings.note, { subtle: true, size: 'Small' })] : []),
    ];
    return adaptiveCard(body, { summary: `This channel gets BILL cards for ${all.join(', ')}.` });
  },
};

const unsubscribeCommand: Command<NotificationsDeps> = {
  name: 'unsubscribe',
  usage: 'unsubscribe [kind | all]',
  description: 'Stop BILL cards in this channel (one kind, or all of them)',
  examples: ['unsubscribe', 'unsubscribe vendors'],
  scopes: ['channel'],
  upstream: false,
  rank: 51,
  async run(ctx, deps) {
    const n = deps.notify;
    const target = channelOf(ctx);
    const kinds = ctx.input.args.length === 0 ? [...SUBSCRIPTION_KINDS] : parseKinds(ctx.input.args);
    if (!kinds || kinds.length === 0)
      throw new InputError(
        `I can't unsubscribe from "${ctx.input.argText.slice(0, 60)}"`,
        `Type **unsubscribe** for everything, or one of: ${SUBSCRIPTION_KINDS.join(', ')}.`,
        `unsubscribe ${ctx.input.argText}`,
      );
    const before = await n.subscriptions.forChannel(target);
    const removed = await n.subscriptions.remove(target, kinds);
    if (removed.length > 0) {
      await auditOrUndo(auditAdmin(deps.audit, ctx, 'unsubscribe', 'ok', ctx.orgId, { kinds: removed }), async () => {
        for (const sub of before.filter((s) => removed.includes(s.kind)))
          await n.subscriptions.add(target, [sub.kind], sub.reference).catch(() => undefined);
      });
      ctx.log.info({ removed }, 'channel unsubscribed');
    }
    const left = (await n.subscriptions.forChannel(target)).map((s) => s.kind);
    const asked = kinds.length === SUBSCRIPTION_KINDS.length ? 'anything' : kinds.join(', ');
    const said = removed.length > 0 ? `No more cards here for: ${removed.join(', ')}.` : `This channel was not subscribed to ${asked}.`;
    const body: CardElement[] = [title(removed.length > 0 ? 'Unsubscribed' : 'Nothing to unsubscribe'), text(said)];
    if (left.length > 0) body.push(text(`Still subscribed to: ${left.join(', ')}.`, { subtle: true }));
    return adaptiveCard(body, {
      summary: removed.length > 0 ? `This channel no longer gets BILL cards for ${removed.join(', ')}.` : 'Nothing to unsubscribe.',
    });
  },
};

const subscriptionsCommand: Command<NotificationsDeps> = {
  name: 'subscriptions',
  usage: 'subscriptions',
  description: 'What this channel hears about from BILL, and its digest',
  examples: ['subscriptions'],
  scopes: ['channel'],
  upstream: false,
  rank: 52,
  async run(ctx, deps) {
    const target = channelOf(ctx);
    const subs = await deps.notify.subscriptions.forChannel(target);
    const kinds = subs.map((s) => s.kind);
    const digest = await deps.notify.subscriptions.digest(target);
    const fmt = formatOf(ctx, deps.settings);
    const body: CardElement[] = [title('Subscriptions')];
    if (subs.length === 0)
      body.push(text('This channel gets no BILL cards. Type **subscribe payments** (or bills, invoices, vendors, spend, all) to start.'));
    else body.push(text(subscribedText(kinds)), facts(subs.map((s) => [s.kind, `since ${dateTime(s.createdAt, fmt)}`])));
    const digestWords = digest ? `Digest: ${scheduleIn(digest.schedule, fmt)}.` : 'Digest: off. Type **digest daily 09:00** for one.';
    body.push(text(digestWords, { subtle: !digest }));
    if (ctx.orgId) body.push(...(await webhookWarning(deps, ctx.orgId)));
    return adaptiveCard(body, {
      summary: subs.length === 0 ? 'This channel gets no BILL cards.' : `This channel gets BILL cards for ${kinds.join(', ')}.`,
    });
  },
};

const DIGEST_HINT = 'Type **digest daily 09:00**, **digest weekly monday 09:00**, **digest off** or **digest now**.';

const digestCommand: Command<NotificationsDeps> = {
  name: 'digest',
  usage: 'digest daily <HH:MM> | weekly <day> <HH:MM> | off | now',
  description: 'A summary card of bills due this week, overdue bills and overdue invoices, on a schedule or now',
  examples: ['digest daily 09:00', 'digest weekly monday 08:30', 'digest now', 'digest off'],
  scopes: ['channel'],
  upstream: true,
  rank: 55,
  async run(ctx, deps) {
    const n = deps.notify;
    const target = channelOf(ctx);
    const cmd = parseDigestArgs(ctx.input.args);
    const fmt = formatOf(ctx, deps.settings);
    const nextAt = (schedule: DigestSchedule) => dateTime(nextSlot(schedule, ctx.now.getTime(), fmt.timeZone).at, fmt);
    switch (cmd.action) {
      case 'error':
        throw new InputError(`I can't read that: ${cmd.problem}`, DIGEST_HINT, `digest ${ctx.input.argText}`);
      case 'show': {
        const setting = await n.subscriptions.digest(target);
        if (!setting)
          return notice('No digest here', `This channel has no scheduled digest. ${DIGEST_HINT}`, 'This channel has no scheduled digest.');
        return adaptiveCard(
          [
            title('Digest'),
            text(
              `This channel gets a digest ${scheduleIn(setting.schedule, fmt)}, when something changed since the last one. Next: ${nextAt(setting.schedule)}.`,
            ),
            text(DIGEST_HINT, { subtle: true }),
          ],
          { summary: `Digest ${describeSchedule(setting.schedule)}.` },
        );
      }
      case 'now': {
        const orgId = boundOrg(ctx);
        const content = await n.composeDigest(orgId, ctx.now.getTime(), 'now');
        return digestCard(content, { ...fmt, note: deps.settings.note });
      }
      case 'off': {
        const had = await n.subscriptions.digest(target);
        if (!had) return notice('No digest here', 'This channel had no scheduled digest.', 'This channel had no scheduled digest.');
        await n.subscriptions.remove(target, ['digest']);
        await auditOrUndo(auditAdmin(deps.audit, ctx, 'digest.off', 'ok', ctx.orgId), () => n.subscriptions.setDigest(target, had));
        return notice('Digest off', 'This channel no longer gets a scheduled digest. **digest now** still shows one.', 'Digest off.');
      }
      case 'set': {
        const orgId = boundOrg(ctx);
        const previous = await n.subscriptions.digest(target);
        const { schedule } = cmd;
        await n.subscriptions.setDigest(target, { schedule, reference: await referenceFor(ctx, deps, target) });
        await auditOrUndo(
          auditAdmin(deps.audit, ctx, 'digest', 'ok', orgId, { schedule: describeSchedule(schedule), timeZone: fmt.timeZone }),
          () => (previous ? n.subscriptions.setDigest(target, previous) : n.subscriptions.remove(target, ['digest'])),
        );
        const next = nextAt(schedule);
        return adaptiveCard(
          [
            title('Digest scheduled'),
            text(
              `This channel gets a digest ${scheduleIn(schedule, fmt)}: bills due in the next 7 days, overdue bills and overdue invoices. It is posted only when something changed since the last one.`,
            ),
            facts([['Next', next]]),
            text('**digest now** shows one right away; **digest off** stops it.', { subtle: true }),
          ],
          {
            summary: `Digest ${describeSchedule(schedule)}; next ${next}.`,
            actions: [executeAction('Show one now', { verb: 'run', command: 'digest now' })],
          },
        );
      }
    }
  },
};

const WEBHOOKS_HINT = `Type **webhooks** to list, **webhooks setup https://{your bot}${WEBHOOK_PATH}** to create BILL's subscription, or **webhooks delete {id}**.`;

const webhooksCommand: Command<NotificationsDeps> = {
  name: 'webhooks',
  usage: 'webhooks [setup <url> | delete <id>]',
  description: 'BILL webhook subscriptions feeding billbridge: list, set up, delete (billbridge admins)',
  examples: ['webhooks', 'webhooks setup https://billbridge.example.com/api/bill/webhooks'],
  upstream: true,
  rank: 95,
  async run(ctx, deps) {
    const n = deps.notify;
    const verb = (ctx.input.args[0] ?? 'list').toLowerCase();
    const action = verb === 'setup' ? 'webhook.setup' : verb === 'delete' ? 'webhook.delete' : 'webhook.list';
    if (!deps.access.isAdmin(ctx.caller)) {
      await auditAdmin(deps.audit, ctx, action, 'refused', ctx.orgId, { reason: 'not an admin' }).catch(() => undefined);
      throw new Forbidden('Only billbridge admins can manage BILL webhooks. Ask your billbridge administrator.');
    }
    const orgId = boundOrg(ctx);
    try {
      if (verb === 'setup') {
        const host = deps.settings.publicHostname;
        const url = ctx.input.args[1] ?? (host ? `https://${host}${WEBHOOK_PATH}` : undefined);
        if (!url || ctx.input.args.length > 2)
          throw new InputError('Which URL should BILL send events to?', WEBHOOKS_HINT, ctx.input.argText || undefined);
        const result = await n.setup.setup(orgId, url);
        await auditAdmin(deps.audit, ctx, action, 'ok', orgId, {
          subscriptionId: result.subscription.id,
          outcome: result.action,
          events: result.subscription.events.length,
        });
        const said = {
          created: 'BILL will now send events to billbridge',
          updated: 'The BILL subscription was brought up to date',
          rotated: 'The BILL subscription got a new signing key',
          unchanged: 'BILL already sends events to billbridge',
        }[result.action];
        return adaptiveCard(
          [
            title('Webhooks set up'),
            text(`${said}.`),
            facts([
              ['Subscription', escapeMarkdown(result.subscription.id)],
              ['URL', escapeMarkdown(result.subscription.notificationUrl)],
              ['Events', String(result.subscription.events.length)],
            ]),
            text('The signing key is stored by billbridge and never shown. Channels choose what they hear with **subscribe**.', {
              subtle: true,
            }),
          ],
          { summary: `${said}.` },
        );
      }
      if (verb === 'delete') {
        const id = ctx.input.args[1];
        if (!id || ctx.input.args.length > 2) throw new InputError('Which subscription?', WEBHOOKS_HINT, ctx.input.argText || undefined);
        await n.setup.remove(orgId, id);
        await auditAdmin(deps.audit, ctx, action, 'ok', orgId, { subscriptionId: id });
        const words = `BILL no longer sends events for subscription ${escapeMarkdown(id)}.`;
        return notice('Webhook subscription deleted', words, `Webhook subscription ${id} deleted.`);
      }
      if (verb !== 'list')
        throw new InputError(`"${verb.slice(0, 30)}" is not a webhooks action`, WEBHOOKS_HINT, `webhooks ${ctx.input.argText}`);
      const subs = await n.setup.list(orgId);
      const body: CardElement[] = [
        title('BILL webhook subscriptions'),
        text(`Organisation ${escapeMarkdown(orgId)}: ${subs.length} of 10 allowed.`),
      ];
      for (const s of subs) {
        const state = `${s.enabled ? 'enabled' : 'disabled by BILL (deliveries kept failing)'}${s.keyStored ? '' : ' · billbridge has no key for it'}`;
        // Named in BILL (a subscription made in BILL's own tools may be named at any length): cut short as list cards are.
        const named = `${clipped(s.name)} (${escapeMarkdown(s.id)})`;
        body.push(
          facts([
            ['Subscription', named],
            ['URL', clipped(s.notificationUrl)],
            ['State', state],
            ['Events', String(s.events.length)],
          ]),
        );
      }
      if (subs.length === 0) body.push(text(WEBHOOKS_HINT));
      if (deps.settings.envWebhookKey)
        body.push(text('BILL_WEBHOOK_SECURITY_KEY is set: events signed with it are accepted too.', { subtle: true }));
      return adaptiveCard(body, { summary: `${subs.length} BILL webhook subscriptions.` });
    } catch (err) {
      if (err instanceof WebhookSetupError) {
        await auditAdmin(deps.audit, ctx, action, 'refused', orgId, { reason: err.reason }).catch(() => undefined);
        throw new InputError(err.message, WEBHOOKS_HINT, ctx.input.argText ? `webhooks ${ctx.input.argText}` : undefined);
      }
      if (!(err instanceof InputError)) await auditAdmin(deps.audit, ctx, action, 'error', orgId).catch(() => undefined);
      throw err;
    }
  },
};

export const notificationsCommands = [subscribeCommand, unsubscribeCommand, subscriptionsCommand, digestCommand, webhooksCommand];
