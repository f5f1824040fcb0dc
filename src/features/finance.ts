// What the finance features share: settings, the bound org, "today" and formats, cached answers a card's Refresh
// bypasses, names and currencies by id, argument parsing. Each helper takes the few parts it reads, passed explicitly.
import type { BillOrgClient } from '../bill/api.js';
import type { BillGateway } from '../bill/gateway.js';
import { answerKey, type Answer } from '../mirror/answers.js';
import type { Mirror, ReadOptions } from '../mirror/mirror.js';
import { SPECS, type EntityKind, type Kind, type PartyInfo, type PartyKind } from '../mirror/records.js';
import { BillApiError, InputError, NotBound } from '../errors.js';
import { dateInZone } from '../infra/calendar.js';
import type { ListContext } from '../cards/list.js';
import type { FormatOptions } from '../cards/format.js';
import { shorten } from '../cards/card.js';
import type { CommandContext } from './types.js';

/** The deployment's settings every finance feature reads, taken from config once in app.ts. */
export interface FinanceSettings {
  /** BOT_LOCALE and BOT_TIMEZONE. */
  locale: string;
  timeZone: string;
  /** SANDBOX_NOTE when the embedded sandbox stands in for BILL, else undefined. */
  note: string | undefined;
  /** LIMIT_COMMAND_WAIT_MS: how long a command waits on a mirror build or refresh before it answers with what it has. */
  waitMs: number;
  /** CACHE_TTL_LIST_S, CACHE_TTL_PUSHED_S, CACHE_TTL_OBJECT_S, CACHE_TTL_NAMES_S. */
  cache: { listTtlS: number; pushedTtlS: number; objectTtlS: number; namesTtlS: number };
  /** Whether BILL webhooks bring every change of `entity` in `orgId` to this deployment (its lists may be kept longer). */
  pushFed(orgId: string, entity: EntityKind): boolean;
}

export interface WithSettings {
  settings: FinanceSettings;
}

/** The BILL organisation this conversation is bound to (NotBound -> the "link" card). */
export function boundOrg(ctx: CommandContext): string {
  if (!ctx.orgId) throw new NotBound();
  return ctx.orgId;
}

/** Where a card answering `command` stands: the page asked for, when BILL answered (`asOf`), formats, the sandbox note. */
export function listContext(ctx: CommandContext, { settings }: WithSettings, command: string, asOf: number): ListContext {
  return { page: ctx.input.page, command, asOf, fmt: formatOf(ctx, settings), note: settings.note };
}

/** How dates and amounts read in this conversation: its locale wins over BOT_LOCALE; the team's time zone. */
export function formatOf(ctx: Pick<CommandContext, 'locale'>, settings: { locale: string; timeZone: string }): FormatOptions {
  return { locale: ctx.locale ?? settings.locale, timeZone: settings.timeZone };
}

/** Today's date where the team is (BOT_TIMEZONE): "due today" means today there. */
export function todayOf(ctx: CommandContext, { settings }: WithSettings): string {
  return dateInZone(ctx.now, settings.timeZone);
}

/** AP/AR client of the bound org for a person waiting in a channel. */
export function orgClient(deps: { bill: Pick<BillGateway, 'org'> }, orgId: string): BillOrgClient {
  return deps.bill.org(orgId, { priority: 'interactive' });
}

/** How long a list answer (or mirror read) of these kinds may be reused: CACHE_TTL_PUSHED_S while BILL webhooks bring
 * every change of all of them here, else CACHE_TTL_LIST_S. */
function listTtlS({ settings }: WithSettings, orgId: string, entities: readonly EntityKind[]): number {
  const c = settings.cache;
  return entities.length > 0 && entities.every((e) => settings.pushFed(orgId, e)) ? Math.max(c.listTtlS, c.pushedTtlS) : c.listTtlS;
}

/** How fresh a read of the org's mirror of `kind` must be: bills and invoices as a cached list; vendors and customers
 * CACHE_TTL_NAMES_S (webhooks and a name nobody matches refresh sooner). It waits at most LIMIT_COMMAND_WAIT_MS. */
export function mirrorFreshness(deps: WithSettings, orgId: string, kind: Kind): ReadOptions {
  const ttlS = kind === 'vendor' || kind === 'customer' ? deps.settings.cache.namesTtlS : listTtlS(deps, orgId, [kind]);
  return { maxAgeMs: ttlS * 1000, priority: 'interactive', waitMs: deps.settings.waitMs };
}

/** A command's mirror read: a card's Refresh button refreshes now (one incremental call, never a rebuild). */
export function mirrorRead(ctx: CommandContext, deps: WithSettings, kind: Kind): ReadOptions {
  return { ...mirrorFreshness(deps, boundOrg(ctx), kind), force: ctx.input.refresh === true };
}

/** An answer the mirror does not hold (a list, or with `object` a record, asked of BILL), kept for the bound org; a
 * card's Refresh drops it first. */
export async function cachedAnswer<T>(
  ctx: CommandContext,
  deps: WithSettings & { mirror: Pick<Mirror, 'answers' | 'dropAnswer'> },
  key: string,
  entities: EntityKind[],
  load: () => Promise<T>,
  object = false,
): Promise<Answer<T>> {
  const orgId = boundOrg(ctx);
  if (ctx.input.refresh) deps.mirror.dropAnswer(orgId, key);
  const ttlS = object ? deps.settings.cache.objectTtlS : listTtlS(deps, orgId, entities);
  return deps.mirror.answers.get(orgId, key, { ttlS, kinds: entities }, load);
}

type ByIdDeps = WithSettings & { bill: Pick<BillGateway, 'org'>; mirror: Pick<Mirror, 'byId' | 'answers' | 'dropAnswer'> };

/** A record by its BILL id: from the org's mirror once it holds every record of the kind, else BILL's answer (kept like a
 * record) read as the mirror keeps it; undefined when BILL has none. */
export async function findById<K extends Kind>(ctx: CommandContext, deps: ByIdDeps, kind: K, id: string) {
  const orgId = boundOrg(ctx);
  try {
    const held = await deps.mirror.byId(orgId, kind, id, mirrorRead(ctx, deps, kind));
    if (held) return { ...held, fromMirror: true };
    // Kept as BILL sent it: a notification's Refresh keeps its bills under the same key.
    const got = await cachedAnswer(ctx, deps, answerKey(kind, { id }), [kind], () => SPECS[kind].get(orgClient(deps, orgId), id), true);
    const record = SPECS[kind].keep(got.value);
    return record && { record, refreshedAt: got.fetchedAt, fromMirror: false };
  } catch (err) {
    if (err instanceof BillApiError && err.category === 'notFound') return undefined;
    throw err;
  }
}

/** Names and currencies for these vendor/customer ids, from the org's mirror (one call per 100 it does not hold yet). */
export function resolveParties(
  deps: WithSettings & { mirror: Pick<Mirror, 'names'> },
  orgId: string,
  kind: PartyKind,
  ids: Iterable<string>,
): Promise<Map<string, PartyInfo>> {
  return deps.mirror.names(orgId, kind, ids, { priority: 'interactive', waitMs: deps.settings.waitMs });
}

/** Commands without arguments refuse extra words rather than silently ignoring a filter the person meant. */
export function noArguments(ctx: CommandContext, hint: string): void {
  if (ctx.input.argText.trim() !== '') {
    throw new InputError(`"${ctx.input.name}" doesn't take anything after it`, hint, `${ctx.input.name} ${ctx.input.argText}`);
  }
}

/** A whole number argument in [min, max] ("14", "14 days", "14d"), else the default; anything else is an InputError. */
export function countArgument(
  ctx: CommandContext,
  opts: { min: number; max: number; fallback: number; unit: string; hint: string },
): number {
  if (ctx.input.args.length === 0) return opts.fallback;
  const m = /^(\d{1,6})\s*(?:d|days?|payments?)?$/.exec(ctx.input.args.join(' ').toLowerCase());
  const understood = `${ctx.input.name} ${ctx.input.argText}`;
  if (!m) throw new InputError(`I can't read "${shorten(ctx.input.argText)}" as a number of ${opts.unit}`, opts.hint, understood);
  const n = Number(m[1]);
  if (n < opts.min || n > opts.max)
    throw new InputError(`${n} is out of range: use ${opts.min} to ${opts.max} ${opts.unit}`, opts.hint, understood);
  return n;
}

/** The closing quote of each opening quote a name may be typed in. */
const QUOTES: Record<string, string> = { '"': '"', "'": "'", '“': '”', '‘': '’', '«': '»' };

/** A name or number typed after a command, without surrounding quotes or a stray trailing colon. */
export function textArgument(ctx: CommandContext): string {
  const s = ctx.input.argText.trim();
  const close = QUOTES[s.charAt(0)];
  return s.length >= 2 && close !== undefined && s.endsWith(close) ? s.slice(1, -1).trim() : s;
}

/** The number typed after `bill` or `invoice`: asked for when missing, refused past 100 characters (no number is that long). */
export function numberArgument(ctx: CommandContext, what: 'bill' | 'invoice', hint: string): string {
  const typed = textArgument(ctx);
  if (typed === '') throw new InputError(`Which ${what}?`, hint);
  if (typed.length > 100) throw new InputError('That is too long for an invoice number', hint, `${what} ${shorten(typed)}`);
  return typed;
}
