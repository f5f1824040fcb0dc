// `status`: how busy billbridge is — every upstream budget (used, waiting, running, refused, last throttle), the cache, the version.
// Members see whether the bot is healthy and linked; hosts, paths and organisation ids are for billbridge admins.
import type { BillGateway } from '../../bill/gateway.js';
import type { AccessPolicy } from '../access.js';
import type { Clock } from '../../infra/clock.js';
import type { Limiter } from '../../infra/limits/types.js';
import type { Mirror } from '../../mirror/mirror.js';
import { PUSH_FED } from '../../notify/kinds.js';
import type { Notifications } from '../../notify/index.js';
import type { AuditTrail } from '../../infra/audit.js';
import { budgetsSection, cacheSection, statusCard, storedSecretsSection, type StatusCardOptions } from './statusCards.js';
import { auditSection, billSection } from './billStatus.js';
import { conversationSection, conversationStatus, type ConversationStatusDeps } from './conversationStatus.js';
import { notificationsSection } from '../notifications/refresh.js';
import type { Command } from '../types.js';

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
    note: string | undefined;
    cache: { listTtlS: number; pushedTtlS: number };
  };
  /** Stored secrets SECRETS_KEY cannot open, counted at start-up. */
  unopenableSecrets(): number;
}

export const statusCommand: Command<StatusDeps> = {
  name: 'status',
  usage: 'status',
  description: "This team's BILL organisation, BILL connectivity and session, budgets, cache and version",
  examples: ['status'],
  upstream: false,
  rank: 80,
  async run(ctx, deps) {
    const { locale, timeZone, version, note, cache } = deps.settings;
    const opts: StatusCardOptions = { locale, timeZone, version, now: deps.clock.now(), note };
    const admin = deps.access.isAdmin(ctx.caller);
    const orgId = ctx.orgId;
    const pushFed = orgId
      ? { kinds: PUSH_FED.filter((p) => deps.notify.push.fed(orgId, p.entity)).map((p) => p.kind), ...cache }
      : undefined;
    // S&E tokens are per organisation: the row says whether THIS team's organisation has one, not whether any does.
    let spendConfigured = false;
    try {
      spendConfigured = orgId !== undefined && deps.bill.spend(orgId) !== undefined;
    } catch {
      // spend() refuses an organisation the deployment does not serve: it has no token.
    }
    const billStatus = { ...deps.bill.status(), spendConfigured };
    const unopenable = deps.unopenableSecrets();
    // Top to bottom. The audit log's path is a server path, and stored secrets SECRETS_KEY cannot open are something to
    // act on: both for billbridge admins only.
    const sections = [
      conversationSection(await conversationStatus(deps, ctx.scope), ctx.scope.kind, opts, admin),
      billSection(billStatus, orgId, orgId ? deps.mirror.info(orgId) : [], opts, pushFed, { admin }),
      await notificationsSection(ctx, deps.notify, opts),
      budgetsSection(deps.limiter.snapshot(), opts, { admin, orgId, tenantId: ctx.scope.tenantId }),
      cacheSection(deps.mirror.answers.stats(), opts),
      admin ? auditSection(deps.audit.location) : undefined,
      admin && unopenable > 0 ? storedSecretsSection(unopenable) : undefined,
    ];
    return statusCard(
      sections.filter((s) => s !== undefined),
      opts,
    );
  },
};
