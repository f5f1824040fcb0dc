// `status`: how busy billbridge is — every upstream budget (used, waiting, running, refused, last throttle), the cache, the version.
// Members see whether the bot is healthy and linked; hosts, paths and organisation ids are for billbridge admins.
import type { BudgetSnapshot } from '../../limits/types.js';
import { PUSH_FED } from '../../notify/kinds.js';
import { budgetsSection, cacheSection, statusCard, storedSecretsSection, type StatusCardOptions, type StatusSection } from './statusCards.js';
import { SANDBOX_NOTE } from '../../cards/words.js';
import { auditSection, billSection } from './billStatus.js';
import { conversationSection } from './conversationStatus.js';
import { notificationsSection } from '../notifications/refresh.js';
import type { CommandContext, CommandDefinition } from '../types.js';

/** Builds one section of the status card; undefined leaves it out. Sections appear in this list's order. */
export type StatusSectionBuilder = (ctx: CommandContext, opts: StatusCardOptions) => Promise<StatusSection | undefined> | StatusSection | undefined;

/**
 * Budgets a person may see. Everyone sees app-wide budgets (dev keys and tokens only as hashes) and the
 * aggregated thread/team rows; other organisations' and tenants' rows are for billbridge admins only.
 */
export function visibleBudgets(rows: BudgetSnapshot[], who: { admin: boolean; orgId: string | undefined; tenantId: string | undefined }): BudgetSnapshot[] {
  if (who.admin) return rows;
  return rows.filter((r) => {
    if (r.budget === 'bill.concurrency') return who.orgId !== undefined && r.key.endsWith(`/${who.orgId}`);
    if (r.budget === 'graph.tenant' || r.budget === 'identity') return who.tenantId !== undefined && r.key.toLowerCase() === who.tenantId.toLowerCase();
    return true;
  });
}

const budgets: StatusSectionBuilder = (ctx, opts) => {
  const admin = ctx.services.access.isAdmin(ctx.caller);
  return budgetsSection(visibleBudgets(ctx.services.limiter.snapshot(), { admin, orgId: ctx.orgId, tenantId: ctx.scope.tenantId }), opts, { admin });
};

const cache: StatusSectionBuilder = (ctx, opts) => cacheSection(ctx.services.mirror.answers.stats(), opts);

/** This conversation: binding, install record, Graph's view of the team. */
const conversation: StatusSectionBuilder = (ctx, opts) => conversationSection(ctx, opts);

/** Whether `orgId` has its own Spend & Expense token (an organisation the deployment does not serve has none). */
function spendTokenFor(ctx: CommandContext, orgId: string): boolean {
  try {
    return ctx.services.bill.spend(orgId) !== undefined;
  } catch {
    return false;
  }
}

/** BILL: backend, connectivity, this org's session age and sign-ins, S&E, the number indexes. */
const bill: StatusSectionBuilder = (ctx, opts) => {
  const { mirror, notify } = ctx.services;
  const orgId = ctx.orgId;
  const indexes = orgId ? mirror.info(orgId) : [];
  const { pushedTtlS, listTtlS } = ctx.services.config.cache;
  const pushFed = orgId && notify ? { kinds: PUSH_FED.filter((p) => notify.push.fed(orgId, p.entity)).map((p) => p.kind), pushedTtlS, listTtlS } : undefined;
  // S&E tokens are per organisation: the row says whether THIS team's organisation has one, not whether any does.
  const status = { ...ctx.services.bill.status(), spendConfigured: orgId !== undefined && spendTokenFor(ctx, orgId) };
  return billSection(status, orgId, indexes, opts, pushFed, { admin: ctx.services.access.isAdmin(ctx.caller) });
};

/** Where the audit log lives is a server path: shown to billbridge admins only. */
const audit: StatusSectionBuilder = (ctx) => (ctx.services.access.isAdmin(ctx.caller) ? auditSection(ctx.services.audit.location) : undefined);

/** The card's sections, top to bottom. */
/** This channel's BILL notifications and digest, the outbox, dead letters, webhook keys. */
const notifications: StatusSectionBuilder = (ctx, opts) => notificationsSection(ctx, opts);

/** Stored secrets SECRETS_KEY cannot open: something for billbridge admins to act on, shown to them only when there are any. */
const storedSecrets: StatusSectionBuilder = (ctx) => {
  const unopenable = ctx.services.storedSecrets?.unopenable ?? 0;
  return unopenable > 0 && ctx.services.access.isAdmin(ctx.caller) ? storedSecretsSection(unopenable) : undefined;
};

export const STATUS_SECTIONS: readonly StatusSectionBuilder[] = [conversation, bill, notifications, budgets, cache, audit, storedSecrets];

export const statusCommand: CommandDefinition = {
  name: 'status',
  usage: 'status',
  description: 'This team\'s BILL organisation, BILL connectivity and session, budgets, cache and version',
  examples: ['status'],
  upstream: false,
  rank: 80,
  async run(ctx) {
    const { config, backend, clock } = ctx.services;
    const opts: StatusCardOptions = {
      locale: config.locale,
      timeZone: config.timeZone,
      version: config.version,
      now: clock.now(),
      note: backend.kind === 'sandbox' ? SANDBOX_NOTE : undefined,
    };
    const sections: StatusSection[] = [];
    for (const build of STATUS_SECTIONS) {
      const section = await build(ctx, opts);
      if (section) sections.push(section);
    }
    return statusCard(sections, opts);
  },
};
