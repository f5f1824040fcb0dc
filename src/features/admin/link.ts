// `link <orgId>` / `unlink`: a billbridge admin binds this team (or this chat) to a BILL organisation, multi-org only.
import { Forbidden, InputError } from '../../errors.js';
import { bindingTarget, type OrgBindings } from '../../bindings/bindings.js';
import { adaptiveCard, escapeMarkdown, facts, text, title, type CardReply } from '../../cards/card.js';
import { auditAdmin, auditOrUndo } from '../audit.js';
import type { AccessPolicy } from '../access.js';
import type { AuditTrail } from '../../infra/audit.js';
import type { Command, CommandContext } from '../types.js';

export interface LinkDeps {
  orgBindings: OrgBindings;
  access: Pick<AccessPolicy, 'isAdmin'>;
  audit: Pick<AuditTrail, 'admin'>;
}

function here(ctx: CommandContext): string {
  return ctx.scope.kind === 'channel' ? 'This team' : 'This chat';
}

function singleOrgCard(ctx: CommandContext): CardReply {
  const org = ctx.orgId ? `BILL organisation **${escapeMarkdown(ctx.orgId)}**` : 'the one configured BILL organisation';
  return adaptiveCard(
    [
      title('Nothing to link'),
      text(`This billbridge serves one BILL organisation, so every team and chat uses ${org} automatically.`),
      text(
        'To serve several organisations, an administrator lists them in BILL_ALLOWED_ORG_IDS; then each team is linked with **link {BILL organisation id}**.',
        { subtle: true },
      ),
    ],
    { summary: 'This billbridge serves one BILL organisation; every team uses it automatically.' },
  );
}

/** Only admins link: a refusal is audited, then thrown for the error card to explain. */
async function requireAdmin(ctx: CommandContext, deps: LinkDeps, verb: 'link' | 'unlink'): Promise<void> {
  if (deps.access.isAdmin(ctx.caller)) return;
  await auditAdmin(deps.audit, ctx, verb, 'refused', undefined, { reason: 'not an admin' }).catch(() => undefined);
  throw new Forbidden(
    `Only billbridge admins can ${verb} ${here(ctx).toLowerCase()} ${verb === 'link' ? 'to' : 'from'} a BILL organisation. Ask your billbridge administrator.`,
  );
}

export const linkCommand: Command<LinkDeps> = {
  name: 'link',
  usage: 'link <BILL organisation id>',
  description: 'Bind this team to a BILL organisation (billbridge admins)',
  examples: ['link 00801ABCDEFGHIJ1a2b'],
  upstream: false,
  rank: 90,
  async run(ctx, deps) {
    if (deps.orgBindings.mode !== 'multi') return singleOrgCard(ctx);
    await requireAdmin(ctx, deps, 'link');
    const bindings = deps.orgBindings;
    const allowedList = bindings.allowedOrgIds.map((o) => escapeMarkdown(o)).join(', ');
    const [typed, ...extra] = ctx.input.args;
    if (typed === undefined || extra.length > 0) {
      throw new InputError(
        'Which BILL organisation?',
        `Type **link {BILL organisation id}**. Organisations this billbridge may use: ${allowedList}.`,
        ctx.input.argText || undefined,
      );
    }
    const orgId = bindings.allowedOrg(typed);
    if (!orgId) {
      await auditAdmin(deps.audit, ctx, 'link', 'refused', undefined, { reason: 'organisation not allowed', typed }).catch(() => undefined);
      throw new InputError("That organisation isn't one this billbridge may use", `Organisations it may use: ${allowedList}.`, typed);
    }
    const target = bindingTarget(ctx.scope);
    if (!target) throw new InputError("I can't tell which team this is", 'Type the command in a channel of the team you want to link.');
    const previousOrgId = await bindings.link(target, orgId, ctx.caller.aadObjectId);
    await auditOrUndo(auditAdmin(deps.audit, ctx, 'link', 'ok', orgId, previousOrgId ? { previousOrgId } : undefined), () =>
      previousOrgId ? bindings.link(target, previousOrgId, ctx.caller.aadObjectId) : bindings.remove(target),
    );
    ctx.log.info({ orgId, previousOrgId, target: target.kind }, 'binding linked');
    const changed = previousOrgId && previousOrgId !== orgId ? ` (was ${escapeMarkdown(previousOrgId)})` : '';
    return adaptiveCard(
      [
        title('Linked'),
        text(
          `${here(ctx)} now uses BILL organisation **${escapeMarkdown(orgId)}**${changed}. Everyone here sees that organisation's data.`,
        ),
        facts([
          ['Organisation', escapeMarkdown(orgId)],
          ['Linked by', escapeMarkdown(ctx.caller.name ?? ctx.caller.aadObjectId ?? 'unknown')],
        ]),
      ],
      { summary: `${here(ctx)} now uses BILL organisation ${orgId}.` },
    );
  },
};

export const unlinkCommand: Command<LinkDeps> = {
  name: 'unlink',
  usage: 'unlink',
  description: "Remove this team's BILL organisation link (billbridge admins)",
  examples: ['unlink'],
  upstream: false,
  rank: 91,
  async run(ctx, deps) {
    if (deps.orgBindings.mode !== 'multi') return singleOrgCard(ctx);
    await requireAdmin(ctx, deps, 'unlink');
    const bindings = deps.orgBindings;
    const target = bindingTarget(ctx.scope);
    const previous = target && (await bindings.remove(target));
    if (!target || !previous) {
      const line = `${here(ctx)} is not linked to a BILL organisation.`;
      return adaptiveCard([title('Nothing to unlink'), text(line)], { summary: line });
    }
    await auditOrUndo(auditAdmin(deps.audit, ctx, 'unlink', 'ok', previous), () => bindings.link(target, previous, ctx.caller.aadObjectId));
    ctx.log.info({ previousOrgId: previous }, 'binding removed');
    return adaptiveCard(
      [
        title('Unlinked'),
        text(
          `${here(ctx)} no longer uses BILL organisation **${escapeMarkdown(previous)}**. No BILL data is shown here until an admin links it again.`,
        ),
      ],
      { summary: `${here(ctx)} no longer uses BILL organisation ${previous}.` },
    );
  },
};
