// `status`: how busy billbridge is — every upstream budget (used, waiting, running, refused, last throttle), the cache, the version.
// Members see whether the bot is healthy and linked; hosts, paths and organisation ids are for billbridge admins.
import type { BillGateway } from '../../bill/gateway.js';
import type { AccessPolicy } from '../access.js';
import type { Clock } from '../../infra/clock.js';
import type { BudgetSnapshot, Limiter } from '../../infra/limits/types.js';
import type { Mirror } from '../../mirror/mirror.js';
import { PUSH_FED } from '../../notify/kinds.js';
import type { Notifications } from '../../notify/index.js';
import type { AuditTrail } from '../../infra/audit.js';
import {
  budgetsSection,
  cacheSection,
  statusCard,
  storedSecretsSection,
  type StatusCardOptions,
  type StatusSection,
} from './statusCards.js';
import { auditSection, billSection } from './billStatus.js';
import { conversationSection, type ConversationStatusDeps } from './conversationStatus.js';
import { notificationsSection } from '../notifications/refresh.js';
import type { Command, CommandContext } from '../types.js';

/** What `status` reports on: nearly every part, each read for its own section. */
export interface StatusDeps extends ConversationStatusDeps {
  access: Pick<AccessPolicy, 'isAdmin'>;
  limiter: Pick<Limiter, 'snapshot'>;
  mirror: Pick<Mirror, 'answers' | 'info'>;
  bill: Pick<BillGateway, 'status' | 'spend'>;
  audit: Pick<AuditTrail, 'location'>;
  notify: Pick<Notifications, 'status' | 'push'>;
  clock: Clock;
  settings: {
    locale: string;
    timeZone: string;
    version: string;
    /** SANDBOX_NOTE when the embedded sandbox stands in for BILL. */
    note: string | undefined;
    cache: { listTtlS: number; pushedTtlS: number };
  };
  /** Stored secrets SECRETS_KEY cannot open, counted at start-up. */
  unopenableSecrets(): number;
}

/** Builds one section of the status card; undefined leaves it out. Sections appear in this list's order. */
type StatusSectionBuilder = (
  ctx: CommandContext,
  deps: StatusDeps,
  opts: StatusCardOptions,
) => Promise<StatusSection | undefined> | StatusSection | undefined;

/**
 * Budgets a person may see. Everyone sees app-wide budgets (dev keys and tokens only as hashes) and the
 * aggregated thread/team rows; other organisations' and tenants' rows are for billbridge admins only.
 */
export function visibleBudgets(
  rows: BudgetSnapshot[],
  who: { admin: boolean; orgId: string | undefined; tenantId: string | undefined },
): BudgetSnapshot[] {
  if (who.admin) return rows;
  return rows.filter((r) => {
    if (r.budget === 'bill.concurrency') return who.orgId !== undefined && r.key.endsWith(`/${who.orgId}`);
    if (r.budget === 'graph.tenant' || r.budget === 'identity') return r.key.toLowerCase() === who.tenantId?.toLowerCase();
    return true;
  });
}

const budgets: StatusSectionBuilder = (ctx, deps, opts) => {
  const admin = deps.access.isAdmin(ctx.caller);
  return budgetsSection(visibleBudgets(deps.limiter.snapshot(), { admin, orgId: ctx.orgId, tenantId: ctx.scope.tenantId }), opts, {
    admin,
  });
};

const cache: StatusSectionBuilder = (_ctx, deps, opts) => cacheSection(deps.mirror.answers.stats(), opts);

/** This conversation: binding, install record, Graph's view of the team. */
const conversation: StatusSectionBuilder = (ctx, deps, opts) => conversationSection(ctx, deps, opts, deps.access.isAdmin(ctx.caller));

/** Whether `orgId` has its own Spend & Expense token (an organisation the deployment does not serve has none). */
function spendTokenFor(deps: StatusDeps, orgId: string): boolean {
  try {
    return deps.bill.spend(orgId) !== undefined;
  } catch {
    return false;
  }
}

/** BILL: backend, connectivity, this org's session age and sign-ins, S&E, the number indexes. */
const bill: StatusSectionBuilder = (ctx, deps, opts) => {
  const { mirror, notify } = deps;
  const orgId = ctx.orgId;
  const indexes = orgId ? mirror.info(orgId) : [];
  const { pushedTtlS, listTtlS } = deps.settings.cache;
  const pushFed = orgId
    ? { kinds: PUSH_FED.filter((p) => notify.push.fed(orgId, p.entity)).map((p) => p.kind), pushedTtlS, listTtlS }
    : undefined;
  // S&E tokens are per organisation: the row says whether THIS team's organisation has one, not whether any does.
  const status = { ...deps.bill.status(), spendConfigured: orgId !== undefined && spendTokenFor(deps, orgId) };
  return billSection(status, orgId, indexes, opts, pushFed, { admin: deps.access.isAdmin(ctx.caller) });
};

/** Where the audit log lives is a server path: shown to billbridge admins only. */
const audit: StatusSectionBuilder = (ctx, deps) => (deps.access.isAdmin(ctx.caller) ? auditSection(deps.audit.location) : undefined);

/** This channel's BILL notifications and digest, the outbox, dead letters, webhook keys. */
const notifications: StatusSectionBuilder = (ctx, deps, opts) => notificationsSection(ctx, deps.notify, opts);

/** Stored secrets SECRETS_KEY cannot open: something for billbridge admins to act on, shown to them only when there are any. */
const storedSecrets: StatusSectionBuilder = (ctx, deps) => {
  const unopenable = deps.unopenableSecrets();
  return unopenable > 0 && deps.access.isAdmin(ctx.caller) ? storedSecretsSection(unopenable) : undefined;
};

/** The card's sections, top to bottom. */
const STATUS_SECTIONS: readonly StatusSectionBuilder[] = [conversation, bill, notifications, budgets, cache, audit, storedSecrets];

export const statusCommand: Command<StatusDeps> = {
  name: 'status',
  usage: 'status',
  description: "This team's BILL organisation, BILL connectivity and session, budgets, cache and version",
  examples: ['status'],
  upstream: false,
  rank: 80,
  async run(ctx, deps) {
    const { locale, timeZone, version, note } = deps.settings;
    const opts: StatusCardOptions = { locale, timeZone, version, now: deps.clock.now(), note };
    const sections: StatusSection[] = [];
    for (const build of STATUS_SECTIONS) {
      const section = await build(ctx, deps, opts);
      if (section) sections.push(section);
    }
    return statusCard(sections, opts);
  },
};
