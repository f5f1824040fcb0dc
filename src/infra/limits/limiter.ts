// The shared limiter: admits each outbound call through every budget that applies, in priority order, within its wait.
import { ContextSlot } from '../asyncContext.js';
import type { Clock } from '../clock.js';
import type { Config } from '../../config.js';
import { DependencyUnavailable, LimitExceeded, errorMessage } from '../../errors.js';
import type { Logger } from '../log.js';
import type { UpstreamCallCounter } from '../upstreamCalls.js';
import { budgetsFor, type BudgetRef, type BudgetRule } from './budgets.js';
import { LocalBudgetStore } from './store.js';
import type { ActiveGrant, AdmittedCall, BudgetSnapshot, Limiter, Priority, RunOptions, Throttle, Upstream } from './types.js';
import { HOUR_MS, nextHour } from './windows.js';

/** Calls a concurrency budget must have seen complete before it refuses a wait as hopeless from its own estimate. */
const MIN_SAMPLES_TO_REFUSE_EARLY = 3;
/** A retry estimate is never shorter than this (a person cannot act faster). */
const MIN_RETRY_MS = 1_000;
/** How often budgets kept per conversation or team are checked for idleness. */
const SWEEP_EVERY_MS = 60_000;
/** After BDC_1322, how long each step of reduced concurrency lasts before one slot comes back. */
const SHRINK_HOLD_MS = 5_000;

/** Cumulative counts per budget name, for counters that must never go down (idle keys are forgotten, these are not). */
export interface BudgetCounters {
  budget: string;
  granted: number;
  rejected: Partial<Record<LimitExceeded['reason'], number>>;
  throttles: Partial<Record<Throttle['kind'], number>>;
  lastThrottle?: LastThrottle;
}

type LastThrottle = Required<Pick<BudgetSnapshot, 'lastThrottleAt' | 'lastThrottleKind'>>;

interface GrantContext extends ActiveGrant {
  /** Concurrency budgets held by this call chain: a nested call to the same budget does not queue behind itself. */
  slots: ReadonlySet<string>;
}

interface Ticket {
  priority: Priority;
  deadline: number;
  grant(): void;
  fail(err: LimitExceeded | DependencyUnavailable): void;
}

class BudgetState {
  rejected = 0;
  lastThrottle: LastThrottle | undefined;
  /** Concurrency budgets: the configured limit, and the one in force (lower for a while after BDC_1322). */
  readonly configured: number;
  effective: number;
  restoreTimer: ReturnType<typeof setTimeout> | undefined;
  /** How long a call holds a slot (a starting guess, refined as calls complete), and how many calls refined it. */
  avgCallMs = 250;
  samples = 0;
  /** Interactive tickets before background ones, first come first served within each; a ticket leaves when settled. */
  readonly waiting: Ticket[] = [];
  /** The heads' turns, one after another, while anyone waits. */
  turns: Promise<void> | undefined;
  /** Wakes the head while it sleeps: it asks again when a slot is freed, a ticket leaves or the limiter closes. */
  wake: (() => void) | undefined;
  /** Slots freed so far: a head that saw this change while it asked the store asks again rather than sleep. */
  freed = 0;

  constructor(readonly ref: BudgetRef) {
    this.configured = this.effective = ref.rule.type === 'concurrency' ? ref.rule.limit : 0;
  }
}

/** The head waits `ms` (undefined: no timer), or less when woken. */
function sleep(st: BudgetState, ms: number | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = ms === undefined ? undefined : setTimeout(done, Math.max(0, ms));
    function done() {
      clearTimeout(timer);
      st.wake = undefined;
      resolve();
    }
    st.wake = done;
  });
}

export class SharedLimiter implements Limiter {
  private readonly store: LocalBudgetStore;
  /** Budgets with calls waiting or running, and every app-wide one (an idle per-thread or per-team one is only its counts). */
  private readonly states = new Map<string, BudgetState>();
  /** The rule of each per-conversation or per-team budget (one per name), for the keys the store holds counts of. */
  private readonly aggregateRules = new Map<string, BudgetRule>();
  private readonly counters = new Map<string, BudgetCounters>();
  private readonly grants = new ContextSlot<GrantContext>('limiter grant');
  private lastSweep = 0;
  private closed = false;

  constructor(private readonly deps: { config: Config; clock: Clock; log: Logger; store?: LocalBudgetStore; turns?: UpstreamCallCounter }) {
    this.store = deps.store ?? new LocalBudgetStore();
    // Budgets known from configuration appear in status and metrics before the first call.
    const { credentials, spendApiToken } = deps.config.bill;
    const known: Upstream[] = [{ service: 'graph', tenantId: '' }];
    // A person's sign-in passes every budget the bot's own does, and the people's share.
    if (credentials) known.push({ service: 'bill.login', devKey: credentials.devKey, orgId: credentials.orgId, person: true });
    if (spendApiToken) known.push({ service: 'spend', token: spendApiToken });
    for (const up of known)
      for (const ref of budgetsFor(deps.config.limits, up)) if (ref.key !== '' || ref.budget === 'graph.app') this.state(ref);
  }

  async run<T>(upstream: Upstream, opts: RunOptions, fn: (call: AdmittedCall) => Promise<T>): Promise<T> {
    const refs = budgetsFor(this.deps.config.limits, upstream);
    if (this.closed) throw new LimitExceeded(refs[0]?.budget ?? upstream.service, 5_000, 'busy');
    const now = this.deps.clock.now();
    const interactive = opts.priority === 'interactive';
    const wait = opts.maxWaitMs ?? (interactive ? this.deps.config.limits.commandWaitMs : undefined);
    let deadline = wait === undefined ? Number.POSITIVE_INFINITY : now + Math.max(0, wait);
    // Captured now, so a call started from a draining queue counts for its turn. A person's call (not the Connector send
    // carrying the answer) waits and runs at most until the turn's deadline, so "busy" comes before Teams gives up.
    const turn = this.deps.turns?.scope();
    const endBy = turn && interactive && wait !== undefined && upstream.service !== 'connector' ? turn.deadline : undefined;
    if (endBy !== undefined && refs[0]) {
      // Past the deadline nothing starts, even with every slot free (a slow answer used the turn up).
      if (now >= endBy) throw this.reject(refs[0], MIN_RETRY_MS, 'busy');
      deadline = Math.min(deadline, endBy);
    }
    const outer = this.grants.getStore();

    this.precheck(refs, now, deadline);
    const held: BudgetState[] = [];
    try {
      for (const ref of refs) {
        const st = this.state(ref);
        const slot = ref.rule.type === 'concurrency';
        if (slot && outer?.slots.has(ref.id)) continue;
        await this.admit(st, opts.priority, deadline).finally(() => this.forgetIfIdle(st));
        if (slot) held.push(st);
        this.count(ref.budget).granted++;
      }
    } catch (err) {
      for (const st of held) this.releaseSlot(st, undefined);
      throw err;
    }

    const grant: GrantContext = {
      service: upstream.service,
      budgets: refs.map((r) => `${r.budget}:${r.key}`),
      priority: opts.priority,
      slots: new Set([...(outer?.slots ?? []), ...held.map((st) => st.ref.id)]),
    };
    if (turn) turn.counts[upstream.service] = (turn.counts[upstream.service] ?? 0) + 1;
    const started = this.deps.clock.now();
    try {
      return await this.grants.run(grant, () => fn({ endBy }));
    } finally {
      const took = this.deps.clock.now() - started;
      for (const st of held) this.releaseSlot(st, took);
    }
  }

  /** The grant the current async context runs under (tests prove every request runs inside one). */
  activeGrant(): ActiveGrant | undefined {
    return this.grants.getStore();
  }

  /** Refuses at once what cannot succeed: frozen or spent hourly budgets, spent logins, pauses longer than the wait. */
  private precheck(refs: BudgetRef[], now: number, deadline: number): void {
    for (const ref of refs) {
      const block = this.store.blocked(ref.id, now);
      if (block?.kind === 'hourly') throw this.reject(ref, block.until - now, 'hourly');
      if (block && block.until > deadline) throw this.reject(ref, block.until - now, 'throttled');
      const at = this.failFastAt(ref, now);
      if (ref.failFast && at > now) throw this.reject(ref, at - now, ref.failFast);
    }
  }

  /** When a fail-fast rate budget could take one more call (now for any other). */
  private failFastAt(ref: BudgetRef, now: number): number {
    return ref.failFast && ref.rule.type !== 'concurrency' ? this.store.nthFit(ref.id, ref.rule, now, 1) : now;
  }

  /** Admits a call at once when nobody waits and the budget allows it; else queues it, or refuses a wait that cannot end in time. */
  private async admit(st: BudgetState, priority: Priority, deadline: number): Promise<void> {
    const { ref } = st;
    const now = this.deps.clock.now();
    const block = this.store.blocked(ref.id, now);
    if (st.waiting.length === 0 && !block) {
      if (ref.rule.type === 'concurrency') {
        if (await this.store.acquire(ref.id, st.effective)) return;
      } else {
        const r = await this.store.take(ref.id, ref.rule, now);
        if (r.ok) return;
        if (ref.failFast) throw this.reject(ref, r.retryAt - now, ref.failFast);
      }
    }
    const slot = ref.rule.type === 'concurrency';
    if (slot && deadline <= now) throw this.reject(ref, this.estimate(st, 1), 'busy');
    // Would this call get its turn in time? Windows are arithmetic, so say so now rather than after the wait; slots once
    // calls have been timed: a burst then does not end in hundreds of refusals at one instant, which kept the process
    // from handing freed slots to the calls that did get in.
    if (!slot || (Number.isFinite(deadline) && st.samples >= MIN_SAMPLES_TO_REFUSE_EARLY)) {
      const eta = this.estimate(st, st.waiting.length + 1);
      if (now + eta > deadline) throw this.reject(ref, eta, block && block.until > deadline ? 'throttled' : 'busy');
    }
    await this.enqueue(st, priority, deadline);
  }

  /** Head of a budget's waiting room: takes a unit or the next freed slot as soon as any pause allows, or says why it cannot in time. */
  private async turn(st: BudgetState, ticket: Ticket): Promise<LimitExceeded | undefined> {
    const { ref } = st;
    while (st.waiting.includes(ticket)) {
      const now = this.deps.clock.now();
      const block = this.store.blocked(ref.id, now);
      if (block?.kind === 'hourly') return this.reject(ref, block.until - now, 'hourly');
      if (block) {
        if (block.until > ticket.deadline) return this.reject(ref, block.until - now, 'throttled');
        await sleep(st, block.until - now);
      } else if (ref.rule.type !== 'concurrency') {
        const r = await this.store.take(ref.id, ref.rule, now);
        if (r.ok) break;
        if (ref.failFast) return this.reject(ref, r.retryAt - now, ref.failFast);
        if (r.retryAt > ticket.deadline) return this.reject(ref, r.retryAt - now, 'busy');
        await sleep(st, r.retryAt - now);
      } else {
        const freed = st.freed;
        if (await this.store.acquire(ref.id, st.effective)) {
          if (st.waiting.includes(ticket)) break;
          this.store.release(ref.id);
          this.slotFreed(st);
        } else if (st.freed === freed) {
          // Woken when a slot is freed here; a shared store's slots are freed by other instances too, so it polls.
          await sleep(st, this.store.pollMs);
        }
      }
    }
    // Granted, or abandoned (timed out, closed), when granting does nothing.
    ticket.grant();
    return undefined;
  }

  /** A slot came free here (released, or a BDC_1322 reduction undone): the head asks for it at once. */
  private slotFreed(st: BudgetState): void {
    st.freed++;
    st.wake?.();
  }

  private releaseSlot(st: BudgetState, tookMs: number | undefined): void {
    this.store.release(st.ref.id);
    if (tookMs !== undefined) {
      st.avgCallMs = st.avgCallMs * 0.8 + tookMs * 0.2;
      st.samples++;
    }
    this.slotFreed(st);
  }

  private enqueue(st: BudgetState, priority: Priority, deadline: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.closed) return reject(new LimitExceeded(st.ref.budget, 5_000, 'busy'));
      let timer: ReturnType<typeof setTimeout> | undefined;
      const settle = (): boolean => {
        const at = st.waiting.indexOf(ticket);
        if (at < 0) return false;
        st.waiting.splice(at, 1);
        clearTimeout(timer);
        return true;
      };
      const ticket: Ticket = {
        priority,
        deadline,
        grant: () => settle() && resolve(),
        fail: (err) => settle() && reject(err),
      };
      const firstBackground = priority === 'interactive' ? st.waiting.findIndex((t) => t.priority === 'background') : -1;
      st.waiting.splice(firstBackground < 0 ? st.waiting.length : firstBackground, 0, ticket);
      if (Number.isFinite(deadline)) {
        timer = setTimeout(
          () => {
            ticket.fail(this.reject(st.ref, this.estimate(st, st.waiting.length), 'busy'));
            st.wake?.();
          },
          Math.max(0, deadline - this.deps.clock.now()),
        );
      }
      st.turns ??= this.takeTurns(st);
    });
  }

  /**
   * Gives each waiting ticket its turn as the head, the next one in the same tick the last one ends (moving on through
   * timers left freed slots empty on a busy event loop: 87% of BILL's 3 slots used, issue #23).
   */
  private async takeTurns(st: BudgetState): Promise<void> {
    for (let ticket = st.waiting[0]; ticket; ticket = st.waiting[0]) {
      try {
        const refusal = await this.turn(st, ticket);
        if (refusal) ticket.fail(refusal);
      } catch (err) {
        // A shared store that cannot answer (Redis down) is said as such: the call was not admitted.
        const unavailable = err instanceof DependencyUnavailable;
        if (!unavailable) this.deps.log.error({ budget: st.ref.budget, err: errorMessage(err) }, 'limiter waiting room failed');
        ticket.fail(unavailable ? err : new LimitExceeded(st.ref.budget, MIN_RETRY_MS, 'busy'));
      }
    }
    st.turns = undefined;
    this.forgetIfIdle(st);
  }

  /** An honest "try again in": when the position-th call in this budget's queue could start. */
  private estimate(st: BudgetState, position: number): number {
    const now = this.deps.clock.now();
    const { ref } = st;
    const paused = Math.max(0, (this.store.blocked(ref.id, now)?.until ?? now) - now);
    if (ref.rule.type === 'concurrency') return paused + st.avgCallMs * Math.ceil(Math.max(1, position) / Math.max(1, st.effective));
    return Math.max(paused, this.store.nthFit(ref.id, ref.rule, now, Math.max(1, position)) - now);
  }

  /** Counts a refusal (per key, and per budget name: a per-thread or per-team row shows the name's) and says when to try again. */
  private reject(ref: BudgetRef, retryInMs: number, reason: LimitExceeded['reason']): LimitExceeded {
    if (!ref.aggregate) this.state(ref).rejected++;
    const c = this.count(ref.budget);
    c.rejected[reason] = (c.rejected[reason] ?? 0) + 1;
    this.deps.log.debug({ budget: ref.budget, key: ref.key, reason, retryInMs: Math.round(retryInMs) }, 'limiter refused a call');
    return new LimitExceeded(ref.budget, Math.max(MIN_RETRY_MS, Math.ceil(retryInMs)), reason);
  }

  throttled(upstream: Upstream, throttle: Throttle): void {
    const { log } = this.deps;
    const refs = budgetsFor(this.deps.config.limits, upstream);
    const now = this.deps.clock.now();
    if (throttle.kind === 'concurrency') {
      const ref = refs.find((r) => r.rule.type === 'concurrency');
      if (!ref) return;
      const st = this.state(ref);
      this.mark(ref, now, 'concurrency');
      st.effective = Math.max(1, st.effective - 1);
      this.scheduleRestore(st);
      const fields = { budget: ref.budget, key: ref.key, effective: st.effective, configured: st.configured };
      log.info(fields, 'upstream says too many in flight: concurrency reduced for a while');
    } else if (throttle.kind === 'hourly') {
      const ref = refs.find((r) => r.budget === 'bill.requests');
      if (!ref) return;
      // BILL's hourly budget comes back at the top of the clock hour; never freeze past it.
      const top = nextHour(now);
      const until = Number.isFinite(throttle.untilMs) && throttle.untilMs > now ? Math.min(throttle.untilMs, top) : top;
      this.store.block(ref.id, { until, kind: 'hourly' });
      this.mark(ref, now, 'hourly');
      log.warn(
        { budget: ref.budget, key: ref.key, until: new Date(until).toISOString() },
        'upstream hourly budget spent: calls refused until it resets',
      );
    } else {
      // A Retry-After longer than an hour is treated as an hour (a broken header must not stop a budget for a day).
      const ms = Math.min(HOUR_MS, Math.max(0, Number.isFinite(throttle.ms) ? throttle.ms : 0));
      for (const ref of refs.filter((r) => r.pauseOnRetryAfter)) {
        if (ms > 0) this.store.block(ref.id, { until: now + ms, kind: 'retryAfter' });
        this.mark(ref, now, 'retryAfter');
        log.info(
          { budget: ref.budget, key: ref.aggregate ? undefined : ref.key, pauseMs: ms },
          'upstream asked to retry later: budget paused',
        );
      }
    }
  }

  /** Counts a throttle (per budget name, and per key: a per-thread or per-team row shows the name's, as for refusals). */
  private mark(ref: BudgetRef, now: number, kind: Throttle['kind']): void {
    const c = this.count(ref.budget);
    c.throttles[kind] = (c.throttles[kind] ?? 0) + 1;
    c.lastThrottle = { lastThrottleAt: now, lastThrottleKind: kind };
    if (!ref.aggregate) this.state(ref).lastThrottle = c.lastThrottle;
  }

  /** After BDC_1322, one slot comes back every SHRINK_HOLD_MS until the configured limit is in force again. */
  private scheduleRestore(st: BudgetState): void {
    clearTimeout(st.restoreTimer);
    if (st.effective >= st.configured || this.closed) return;
    st.restoreTimer = setTimeout(() => {
      st.effective = Math.min(st.configured, st.effective + 1);
      this.slotFreed(st);
      this.scheduleRestore(st);
    }, SHRINK_HOLD_MS).unref();
  }

  blockedUntil(upstream: Upstream): number | undefined {
    const now = this.deps.clock.now();
    const freeAt = (ref: BudgetRef) => Math.max(this.store.blocked(ref.id, now)?.until ?? now, this.failFastAt(ref, now));
    const until = Math.max(now, ...budgetsFor(this.deps.config.limits, upstream).map(freeAt));
    return until > now ? until : undefined;
  }

  snapshot(): BudgetSnapshot[] {
    const now = this.deps.clock.now();
    const rows: BudgetSnapshot[] = [];
    const perKey = new Map<string, BudgetSnapshot[]>();
    const budgets: Array<[BudgetRef, BudgetState | undefined]> = [...this.states.values()].map((st) => [st.ref, st]);
    for (const ref of this.aggregateRefs()) if (!this.states.has(ref.id)) budgets.push([ref, undefined]);
    for (const [ref, st] of budgets) {
      const slots = ref.rule.type === 'concurrency' ? st : undefined;
      // A concurrency budget's calls in flight are its slots in use.
      const usage = this.store.usage(ref.id, slots ? { type: 'concurrency', limit: slots.effective } : ref.rule, now);
      const row: BudgetSnapshot = {
        budget: ref.budget,
        key: ref.key,
        ...usage,
        queued: st?.waiting.length ?? 0,
        running: slots ? usage.used : 0,
        rejected: st?.rejected ?? 0,
        ...st?.lastThrottle,
        blockedUntil: this.store.blocked(ref.id, now)?.until,
        configuredLimit: slots && slots.effective !== slots.configured ? slots.configured : undefined,
      };
      if (!ref.aggregate) rows.push(row);
      else if (perKey.has(ref.budget)) perKey.get(ref.budget)?.push(row);
      else perKey.set(ref.budget, [row]);
    }
    // Budgets kept per conversation or team are one row (key "*"): the figures of the key closest to its limit.
    const pressure = (r: BudgetSnapshot) => (r.limit > 0 ? r.used / r.limit : 0);
    for (const [budget, keyed] of perKey) {
      const busiest = keyed.reduce((a, b) => (pressure(b) > pressure(a) ? b : a));
      const blocked = keyed.flatMap((r) => r.blockedUntil ?? []);
      // Its refusals and last throttle are the budget name's: its idle keys are forgotten, these are not.
      const c = this.counters.get(budget);
      const rejected = Object.values(c?.rejected ?? {}).reduce((sum, n) => sum + n, 0);
      const queued = keyed.reduce((sum, r) => sum + r.queued, 0);
      const blockedUntil = blocked.length > 0 ? Math.max(...blocked) : undefined;
      rows.push({ ...busiest, key: '*', keys: keyed.length, queued, rejected, ...c?.lastThrottle, blockedUntil });
    }
    return rows.sort((a, b) => a.budget.localeCompare(b.budget) || a.key.localeCompare(b.key));
  }

  budgetCounters(): BudgetCounters[] {
    return [...this.counters.values()];
  }

  private count(budget: string): BudgetCounters {
    const c = this.counters.get(budget) ?? { budget, granted: 0, rejected: {}, throttles: {} };
    this.counters.set(budget, c);
    return c;
  }

  private state(ref: BudgetRef): BudgetState {
    let st = this.states.get(ref.id);
    if (!st) {
      this.sweep();
      st = new BudgetState(ref);
      this.states.set(ref.id, st);
      if (ref.aggregate) this.aggregateRules.set(ref.budget, ref.rule);
    }
    return st;
  }

  /** A per-thread or per-team (rate) budget keeps state only while calls wait: 7 MB of live heap at the memory bench's 15,000 threads. */
  private forgetIfIdle(st: BudgetState): void {
    if (st.ref.aggregate && st.turns === undefined && this.states.get(st.ref.id) === st) this.states.delete(st.ref.id);
  }

  /** The per-thread and per-team budgets the store holds counts of, as their refs (their state, if any, aside). */
  private *aggregateRefs(): Generator<BudgetRef> {
    for (const id of this.store.ids()) {
      const budget = id.slice(0, id.indexOf('|'));
      const rule = this.aggregateRules.get(budget);
      if (rule) yield { budget, key: id.slice(budget.length + 1), id, rule, aggregate: true };
    }
  }

  /** Forgets idle per-conversation and per-team budgets (their totals live on in the counters). */
  private sweep(): void {
    const now = this.deps.clock.now();
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    for (const { id, rule } of this.aggregateRefs()) {
      if (this.states.has(id) || this.store.usage(id, rule, now).used > 0 || this.store.blocked(id, now)) continue;
      this.store.forget(id);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const st of this.states.values()) {
      for (const ticket of [...st.waiting]) ticket.fail(new LimitExceeded('limiter', 5_000, 'busy'));
      st.wake?.();
      clearTimeout(st.restoreTimer);
    }
    await Promise.all([...this.states.values()].flatMap((st) => st.turns ?? []));
    await this.store.close();
  }
}
