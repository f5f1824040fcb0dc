// `status`: how busy billbridge is — every upstream budget (used, waiting, running, refused, last throttle), the cache, the version.
import type { BudgetSnapshot } from '../../limits/types.js';
import { budgetsSection, cacheSection, statusCard, type StatusCardOptions, type StatusSection } from '../cards/status.js';
import { SANDBOX_NOTE } from './help.js';
import type { CommandContext, CommandDefinition } from './types.js';

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

const budgets: StatusSectionBuilder = (ctx, opts) =>
  budgetsSection(
    visibleBudgets(ctx.services.limiter.snapshot(), { admin: ctx.services.access.isAdmin(ctx.caller), orgId: ctx.orgId, tenantId: ctx.scope.tenantId }),
    opts,
  );

const cache: StatusSectionBuilder = (ctx, opts) => cacheSection(ctx.services.cache.stats(), opts);

/** The card's sections, top to bottom. */
export const STATUS_SECTIONS: readonly StatusSectionBuilder[] = [budgets, cache];

export const statusCommand: CommandDefinition = {
  name: 'status',
  usage: 'status',
  description: 'How busy billbridge is: BILL, Graph and Teams budgets, cache and version',
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
