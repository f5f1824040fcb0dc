// The shared limiter: admits each outbound call through every budget that applies, in priority order, within its wait.
import { ContextSlot } from '../asyncContext.js';
import type { Clock } from '../clock.js';
import type { Config } from '../../config.js';
import { DependencyUnavailable, LimitExceeded, errorMessage } from '../../errors.js';
import type { Logger } from '../log.js';
import { budgetsFor, type BudgetName, type BudgetRef, type BudgetRule } from './budgets.js';
import type { LocalBudgetStore, RateRule } from './store.js';
import type { ActiveGrant, BudgetSnapshot, Limiter, Priority, RunOptions, Throttle, Upstream } from './types.js';
import { nextHour } from './windows.js';

/** Calls a concurrency budget must have seen complete before it refuses a wait as hopeless from its own estimate. */
const MIN_SAMPLES_TO_REFUSE_EARLY = 3;
/** A retry estimate is never shorter than this (a person cannot act faster). */
const MIN_RETRY_MS = 1_000;
/** A Retry-After longer than this is treated as this (a broken header must not stop a budget for a day). */
const MAX_PAUSE_MS = 3_600_000;
/** How often budgets kept per conversation or team are checked for idleness. */
const SWEEP_EVERY_MS = 60_000;
/** After BDC_1322, how long each step of reduced concurrency lasts before one slot comes back. */
const SHRINK_HOLD_MS = 5_000;
/** Starting guess of how long a call holds a concurrency slot (refined as calls complete). */
const INITIAL_CALL_MS = 250;

export type LimitReason = LimitExceeded['reason'];

export interface SharedLimiterDeps {
  config: Config;
  clock: Clock;
  log: Logger;
  /** Where the counts live: this process's memory, or Redis for a fleet. */
  store: LocalBudgetStore;
}

/** Cumulative counts per budget name, for counters that must never go down. */
export interface BudgetCounters {
  budget: string;
  granted: number;
  rejected: Partial<Record<LimitReason, number>>;
  throttles: Partial<Record<Throttle['kind'], number>>;
}

interface GrantContext extends ActiveGrant {
  /** Concurrency budgets held by this call chain: a nested call to the same budget does not queue behind itself. */
  slots: ReadonlySet<string>;
}

interface Ticket {
  priority: Priority;
  deadline: number;
  /** Granted, refused, timed out or closed: its turn stops at the next check. */
  settled: boolean;
  grant(): void;
  fail(err: LimitExceeded | DependencyUnavailable): void;
  /** Wakes the waiting-room job when it sleeps (abandon, release, close). */
  wake: (() => void) | undefined;
}

/** Read through a call: timers and other calls settle a ticket while its turn awaits. */
function ticketDone(t: Ticket): boolean {
  return t.settled;
}

class BudgetState {
  queued = 0;
  running = 0;
  rejected = 0;
  granted = 0;
  lastThrottleAt: number | undefined;
  lastThrottleKind: Throttle['kind'] | undefined;
  /** Concurrency in force (lower than configured for a while after BDC_1322). */
  effective: number;
  restoreTimer: ReturnType<typeof setTimeout> | undefined;
  avgCallMs = INITIAL_CALL_MS;
  /** Calls whose duration fed avgCallMs. */
  samples = 0;
  /** Waiting room: interactive tickets before background ones, first come first served within each (the head is out of it). */
  readonly waiting: Ticket[] = [];
  /** The heads' turns, one after another, while anyone waits. */
  turns: Promise<void> | undefined;
  /** Wake-ups of the head waiter when a slot is freed. */
  readonly slotWaiters = new Set<() => void>();
  /** Slots freed so far: a head that saw this change while it asked the store asks again rather than sleep. */
  freed = 0;

  constructor(readonly ref: BudgetRef) {
    this.effective = ref.rule.type === 'concurrency' ? ref.rule.limit : 0;
  }

  get configured(): number {
    return this.ref.rule.type === 'concurrency' ? this.ref.rule.limit : 0;
  }
}

/** Waits `ms` (undefined: no timer), or less when the ticket is woken (timeout, close) or one of `waiters` is (a slot freed). */
function sleep(ticket: Ticket, ms: number | undefined, waiters?: Set<() => void>): Promise<void> {
  return new Promise((resolve) => {
    const timer = ms === undefined ? undefined : setTimeout(done, Math.max(0, ms));
    function done() {
      clearTimeout(timer);
      waiters?.delete(done);
      ticket.wake = undefined;
      resolve();
    }
    waiters?.add(done);
    ticket.wake = done;
  });
}

export class SharedLimiter implements Limiter {
  private readonly states = new Map<string, BudgetState>();
  private readonly counters = new Map<string, BudgetCounters>();
  /** Aggregate rows keep their own last throttle, since idle keys are forgotten. */
  private readonly aggregateThrottle = new Map<string, { at: number; kind: Throttle['kind'] }>();
  private readonly tickets = new Set<Ticket>();
  private readonly grants = new ContextSlot<GrantContext>('limiter grant');
  private readonly commandWaitMs: number;
  private lastSweep = 0;
  private closed = false;

  constructor(private readonly deps: SharedLimiterDeps) {
    this.commandWaitMs = deps.config.limits.commandWaitMs;
    // Budgets known from configuration appear in status and metrics before the first call.
    const creds = deps.config.bill.credentials;
    const known: Upstream[] = [{ service: 'graph', tenantId: '' }];
    if (creds)
      known.push(
        { service: 'bill.login', devKey: creds.devKey, orgId: creds.orgId },
        { service: 'bill.login', devKey: creds.devKey, orgId: creds.orgId, person: true },
      );
    if (deps.config.bill.spendApiToken) known.push({ service: 'spend', token: deps.config.bill.spendApiToken });
    for (const up of known)
      for (const ref of budgetsFor(this.deps.config.limits, up)) if (ref.key !== '' || ref.budget === 'graph.app') this.state(ref);
  }

  // ---- admission ---------------------------------------------------------------------------------------

  async run<T>(upstream: Upstream, opts: RunOptions, fn: () => Promise<T>): Promise<T> {
    const refs = budgetsFor(this.deps.config.limits, upstream);
    if (this.closed) throw new LimitExceeded(refs[0]?.budget ?? upstream.service, 5_000, 'busy');
    const { clock } = this.deps;
    const now = clock.now();
    const wait = opts.maxWaitMs ?? (opts.priority === 'interactive' ? this.commandWaitMs : undefined);
    const deadline = wait === undefined ? Number.POSITIVE_INFINITY : now + Math.max(0, wait);
    const outer = this.grants.getStore();

    this.precheck(refs, now, deadline);
    const held: BudgetState[] = [];
    try {
      for (const ref of refs) {
        const st = this.state(ref);
        if (ref.rule.type === 'concurrency') {
          if (outer?.slots.has(ref.id)) continue;
          await this.admitSlot(st, opts.priority, deadline);
          held.push(st);
        } else {
          await this.admitRate(st, ref.rule, opts.priority, deadline);
        }
        st.granted++;
        this.count(ref.budget).granted++;
      }
    } catch (err) {
      for (const st of held) this.releaseSlot(st, undefined);
      throw err;
    }

    const slots = new Set(outer?.slots ?? []);
    for (const st of held) slots.add(st.ref.id);
    const grant: GrantContext = {
      service: upstream.service,
      budgets: refs.map((r) => `${r.budget}:${r.key}`),
      priority: opts.priority,
      slots,
    };
    const started = clock.now();
    try {
      return await this.grants.run(grant, fn);
    } finally {
      const took = clock.now() - started;
      for (const st of held) this.releaseSlot(st, took);
    }
  }

  activeGrant(): ActiveGrant | undefined {
    const g = this.grants.getStore();
    return g ? { service: g.service, budgets: [...g.budgets], priority: g.priority } : undefined;
  }

  /** Refuses at once what cannot succeed: frozen or spent hourly budgets, spent logins, pauses longer than the wait. */
  private precheck(refs: BudgetRef[], now: number, deadline: number): void {
    const { store } = this.deps;
    for (const ref of refs) {
      const block = store.blocked(ref.id, now);
      if (block?.kind === 'hourly') throw this.reject(this.state(ref), block.until - now, 'hourly');
      if (block && block.until > deadline) throw this.reject(this.state(ref), block.until - now, 'throttled');
      if (ref.failFast && ref.rule.type !== 'concurrency') {
        const at = store.nthFit(ref.id, ref.rule, now, 1);
        if (at > now) throw this.reject(this.state(ref), at - now, ref.failFast);
      }
    }
  }

  private async admitRate(st: BudgetState, rule: RateRule, priority: Priority, deadline: number): Promise<void> {
    const { store, clock } = this.deps;
    const { ref } = st;
    const now = clock.now();
    const block = store.blocked(ref.id, now);
    if (st.queued === 0 && !block) {
      const r = await store.take(ref.id, rule, now);
      if (r.ok) return;
      if (ref.failFast) throw this.reject(st, r.retryAt - now, ref.failFast);
    }
    // Would this call get its turn in time? Windows are arithmetic, so say so now rather than after the wait.
    const at = Math.max(block?.until ?? now, store.nthFit(ref.id, rule, now, st.queued + 1));
    if (at > deadline) throw this.reject(st, at - now, block && block.until > deadline ? 'throttled' : 'busy');
    await this.enqueue(st, priority, deadline);
  }

  /** Head of a rate budget's waiting room: takes a unit as soon as the windows (and any pause) allow. */
  private async rateTurn(st: BudgetState, rule: RateRule, ticket: Ticket): Promise<void> {
    const { store, clock } = this.deps;
    const { ref } = st;
    for (;;) {
      if (ticketDone(ticket)) return;
      const now = clock.now();
      const block = store.blocked(ref.id, now);
      let at: number;
      if (block?.kind === 'hourly') {
        ticket.fail(this.reject(st, block.until - now, 'hourly'));
        return;
      }
      if (block) {
        at = block.until;
      } else {
        const r = await store.take(ref.id, rule, now);
        if (r.ok) {
          ticket.grant();
          return;
        }
        if (ref.failFast) {
          ticket.fail(this.reject(st, r.retryAt - now, ref.failFast));
          return;
        }
        at = r.retryAt;
      }
      if (at > ticket.deadline) {
        ticket.fail(this.reject(st, at - now, block ? 'throttled' : 'busy'));
        return;
      }
      await sleep(ticket, at - now);
    }
  }

  private async admitSlot(st: BudgetState, priority: Priority, deadline: number): Promise<void> {
    const { store, clock } = this.deps;
    const now = clock.now();
    if (st.queued === 0 && !store.blocked(st.ref.id, now) && (await store.acquire(st.ref.id, st.effective))) {
      st.running++;
      return;
    }
    if (deadline <= now) throw this.reject(st, this.estimate(st, 1), 'busy');
    // Would it get a slot in time? Once calls have been timed, say "busy" now rather than after the whole wait: the
    // person learns it at once, and a burst does not end in hundreds of refusals at the same instant, which would
    // keep the process from handing the freed slots to the calls that did get in.
    if (Number.isFinite(deadline) && st.samples >= MIN_SAMPLES_TO_REFUSE_EARLY) {
      const eta = this.estimate(st, st.queued + 1);
      if (now + eta > deadline) throw this.reject(st, eta, 'busy');
    }
    await this.enqueue(st, priority, deadline);
  }

  /** Head of a concurrency budget's waiting room: takes the next slot that is freed. */
  private async slotTurn(st: BudgetState, ticket: Ticket): Promise<void> {
    const { store, clock } = this.deps;
    const id = st.ref.id;
    for (;;) {
      if (ticketDone(ticket)) return;
      const now = clock.now();
      const block = store.blocked(id, now);
      if (block) {
        if (block.until > ticket.deadline) {
          ticket.fail(this.reject(st, block.until - now, 'throttled'));
          return;
        }
        await sleep(ticket, block.until - now);
        continue;
      }
      const freed = st.freed;
      if (await store.acquire(id, st.effective)) {
        if (ticketDone(ticket)) {
          store.release(id);
          this.slotFreed(st);
          return;
        }
        st.running++;
        ticket.grant();
        return;
      }
      if (st.freed !== freed) continue;
      // Woken when a slot is freed here; a shared store's slots are freed by other instances too, so it polls.
      await sleep(ticket, this.deps.store.pollMs, st.slotWaiters);
    }
  }

  /** A slot came free here (released, or a BDC_1322 reduction undone): the head asks for it at once. */
  private slotFreed(st: BudgetState): void {
    st.freed++;
    for (const wake of [...st.slotWaiters]) wake();
  }

  private releaseSlot(st: BudgetState, tookMs: number | undefined): void {
    this.deps.store.release(st.ref.id);
    st.running = Math.max(0, st.running - 1);
    if (tookMs !== undefined) {
      st.avgCallMs = st.avgCallMs * 0.8 + tookMs * 0.2;
      st.samples++;
    }
    this.slotFreed(st);
  }

  /** Queues a call in a budget's waiting room (priority order) and resolves when its turn grants it. */
  private enqueue(st: BudgetState, priority: Priority, deadline: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.closed) return reject(new LimitExceeded(st.ref.budget, 5_000, 'busy'));
      let timer: ReturnType<typeof setTimeout> | undefined;
      const settle = (): boolean => {
        if (ticket.settled) return false;
        ticket.settled = true;
        st.queued--;
        this.tickets.delete(ticket);
        const at = st.waiting.indexOf(ticket);
        if (at >= 0) st.waiting.splice(at, 1);
        if (timer) clearTimeout(timer);
        return true;
      };
      const ticket: Ticket = {
        priority,
        deadline,
        settled: false,
        wake: undefined,
        grant: () => {
          if (settle()) resolve();
        },
        fail: (err) => {
          if (settle()) reject(err);
        },
      };
      st.queued++;
      this.tickets.add(ticket);
      const firstBackground = priority === 'interactive' ? st.waiting.findIndex((t) => t.priority === 'background') : -1;
      st.waiting.splice(firstBackground < 0 ? st.waiting.length : firstBackground, 0, ticket);
      if (Number.isFinite(deadline)) {
        timer = setTimeout(
          () => {
            if (ticket.settled) return;
            ticket.fail(this.reject(st, this.estimate(st, st.queued), 'busy'));
            ticket.wake?.();
          },
          Math.max(0, deadline - this.deps.clock.now()),
        );
      }
      st.turns ??= this.takeTurns(st);
    });
  }

  /**
   * Gives each waiting ticket its turn as the head, the next one in the same tick the last one ends. (A waiting room
   * that moved on through timers left freed slots empty on a busy event loop: 87% of BILL's 3 slots used, issue #23.)
   * It always awaits a turn before it ends, so `st.turns` is set before it is cleared.
   */
  private async takeTurns(st: BudgetState): Promise<void> {
    for (let ticket = st.waiting.shift(); ticket; ticket = st.waiting.shift()) {
      try {
        await (st.ref.rule.type === 'concurrency' ? this.slotTurn(st, ticket) : this.rateTurn(st, st.ref.rule, ticket));
      } catch (err) {
        // A shared store that cannot answer (Redis down) is said as such: the call was not admitted.
        if (err instanceof DependencyUnavailable) {
          ticket.fail(err);
          continue;
        }
        this.deps.log.error({ budget: st.ref.budget, err: errorMessage(err) }, 'limiter waiting room failed');
        ticket.fail(new LimitExceeded(st.ref.budget, MIN_RETRY_MS, 'busy'));
      }
    }
    st.turns = undefined;
  }

  /** An honest "try again in": when the position-th call in this budget's queue could start. */
  private estimate(st: BudgetState, position: number): number {
    const { store, clock } = this.deps;
    const now = clock.now();
    const { ref } = st;
    const paused = Math.max(0, (store.blocked(ref.id, now)?.until ?? now) - now);
    if (ref.rule.type === 'concurrency') {
      return paused + st.avgCallMs * Math.ceil(Math.max(1, position) / Math.max(1, st.effective));
    }
    return Math.max(paused, store.nthFit(ref.id, ref.rule, now, Math.max(1, position)) - now);
  }

  private reject(st: BudgetState, retryInMs: number, reason: LimitReason): LimitExceeded {
    st.rejected++;
    const c = this.count(st.ref.budget);
    c.rejected[reason] = (c.rejected[reason] ?? 0) + 1;
    this.deps.log.debug({ budget: st.ref.budget, key: st.ref.key, reason, retryInMs: Math.round(retryInMs) }, 'limiter refused a call');
    return new LimitExceeded(st.ref.budget, Math.max(MIN_RETRY_MS, Math.ceil(retryInMs)), reason);
  }

  // ---- server feedback ---------------------------------------------------------------------------------

  throttled(upstream: Upstream, throttle: Throttle): void {
    const { store, clock, log } = this.deps;
    const refs = budgetsFor(this.deps.config.limits, upstream);
    const now = clock.now();
    switch (throttle.kind) {
      case 'concurrency': {
        const ref = refs.find((r) => r.rule.type === 'concurrency');
        if (!ref) return;
        const st = this.state(ref);
        this.mark(st, now, 'concurrency');
        this.shrink(st);
        log.info(
          { budget: ref.budget, key: ref.key, effective: st.effective, configured: st.configured },
          'upstream says too many in flight: concurrency reduced for a while',
        );
        return;
      }
      case 'hourly': {
        const ref = refs.find((r) => r.budget === 'bill.requests');
        if (!ref) return;
        // BILL's hourly budget comes back at the top of the clock hour; never freeze past it.
        const top = nextHour(now);
        const until = Number.isFinite(throttle.untilMs) && throttle.untilMs > now ? Math.min(throttle.untilMs, top) : top;
        store.block(ref.id, { until, kind: 'hourly' });
        this.mark(this.state(ref), now, 'hourly');
        log.warn(
          { budget: ref.budget, key: ref.key, until: new Date(until).toISOString() },
          'upstream hourly budget spent: calls refused until it resets',
        );
        return;
      }
      case 'retryAfter': {
        const ms = Math.min(MAX_PAUSE_MS, Math.max(0, Number.isFinite(throttle.ms) ? throttle.ms : 0));
        for (const ref of refs.filter((r) => r.pauseOnRetryAfter)) {
          const st = this.state(ref);
          if (ms > 0) store.block(ref.id, { until: now + ms, kind: 'retryAfter' });
          this.mark(st, now, 'retryAfter');
          log.info(
            { budget: ref.budget, key: ref.aggregate ? undefined : ref.key, pauseMs: ms },
            'upstream asked to retry later: budget paused',
          );
        }
        return;
      }
    }
  }

  private mark(st: BudgetState, now: number, kind: Throttle['kind']): void {
    st.lastThrottleAt = now;
    st.lastThrottleKind = kind;
    if (st.ref.aggregate) this.aggregateThrottle.set(st.ref.budget, { at: now, kind });
    const c = this.count(st.ref.budget);
    c.throttles[kind] = (c.throttles[kind] ?? 0) + 1;
  }

  private shrink(st: BudgetState): void {
    st.effective = Math.max(1, st.effective - 1);
    this.scheduleRestore(st);
  }

  private scheduleRestore(st: BudgetState): void {
    if (st.restoreTimer) clearTimeout(st.restoreTimer);
    st.restoreTimer = undefined;
    if (st.effective >= st.configured || this.closed) return;
    st.restoreTimer = setTimeout(() => {
      st.restoreTimer = undefined;
      st.effective = Math.min(st.configured, st.effective + 1);
      this.slotFreed(st);
      this.scheduleRestore(st);
    }, SHRINK_HOLD_MS);
    st.restoreTimer.unref();
  }

  blockedUntil(upstream: Upstream): number | undefined {
    const { store, clock } = this.deps;
    const now = clock.now();
    let until: number | undefined;
    for (const ref of budgetsFor(this.deps.config.limits, upstream)) {
      const block = store.blocked(ref.id, now);
      if (block) until = Math.max(until ?? 0, block.until);
      if (ref.failFast && ref.rule.type !== 'concurrency') {
        const at = store.nthFit(ref.id, ref.rule, now, 1);
        if (at > now) until = Math.max(until ?? 0, at);
      }
    }
    return until;
  }

  // ---- visibility ----------------------------------------------------------------------------------------

  snapshot(): BudgetSnapshot[] {
    const now = this.deps.clock.now();
    const rows: BudgetSnapshot[] = [];
    const aggregates = new Map<string, { row: BudgetSnapshot; hottest: number }>();
    for (const st of this.states.values()) {
      const row = this.row(st, now);
      if (!st.ref.aggregate) {
        rows.push(row);
        continue;
      }
      const pressure = row.limit > 0 ? row.used / row.limit : 0;
      const agg = aggregates.get(st.ref.budget);
      if (!agg) {
        aggregates.set(st.ref.budget, { row: { ...row, key: '*', keys: 1 }, hottest: pressure });
        continue;
      }
      const a = agg.row;
      if (pressure > agg.hottest) {
        agg.hottest = pressure;
        Object.assign(a, { limit: row.limit, used: row.used, remaining: row.remaining, windowMs: row.windowMs });
      }
      a.queued += row.queued;
      a.running += row.running;
      a.keys = (a.keys ?? 0) + 1;
      if (row.blockedUntil !== undefined) a.blockedUntil = Math.max(a.blockedUntil ?? 0, row.blockedUntil);
    }
    for (const [budget, { row }] of aggregates) {
      const c = this.counters.get(budget);
      row.rejected = c ? Object.values(c.rejected).reduce((s, n) => s + n, 0) : row.rejected;
      const t = this.aggregateThrottle.get(budget);
      row.lastThrottleAt = t?.at;
      row.lastThrottleKind = t?.kind;
      rows.push(row);
    }
    return rows.sort((a, b) => a.budget.localeCompare(b.budget) || a.key.localeCompare(b.key));
  }

  private row(st: BudgetState, now: number): BudgetSnapshot {
    const { ref } = st;
    const rule: BudgetRule = ref.rule.type === 'concurrency' ? { type: 'concurrency', limit: st.effective } : ref.rule;
    const u = this.deps.store.usage(ref.id, rule, now);
    const block = this.deps.store.blocked(ref.id, now);
    const row: BudgetSnapshot = {
      budget: ref.budget,
      key: ref.key,
      limit: u.limit,
      used: u.used,
      remaining: u.remaining,
      queued: st.queued,
      running: ref.rule.type === 'concurrency' ? st.running : 0,
      rejected: st.rejected,
    };
    if (st.lastThrottleAt !== undefined) {
      row.lastThrottleAt = st.lastThrottleAt;
      row.lastThrottleKind = st.lastThrottleKind;
    }
    if (block) row.blockedUntil = block.until;
    if (u.windowMs !== undefined && ref.rule.type === 'windows') row.windowMs = u.windowMs;
    if (ref.rule.type === 'concurrency' && st.effective !== st.configured) row.configuredLimit = st.configured;
    if (ref.rule.type === 'hourly') row.windowMs = 3_600_000;
    return row;
  }

  /** Cumulative per budget name (grants, refusals by reason, server throttles by kind). */
  budgetCounters(): BudgetCounters[] {
    return [...this.counters.values()].map((c) => ({
      budget: c.budget,
      granted: c.granted,
      rejected: { ...c.rejected },
      throttles: { ...c.throttles },
    }));
  }

  private count(budget: BudgetName): BudgetCounters {
    let c = this.counters.get(budget);
    if (!c) {
      c = { budget, granted: 0, rejected: {}, throttles: {} };
      this.counters.set(budget, c);
    }
    return c;
  }

  // ---- bookkeeping -----------------------------------------------------------------------------------------

  private state(ref: BudgetRef): BudgetState {
    let st = this.states.get(ref.id);
    if (!st) {
      this.sweep();
      st = new BudgetState(ref);
      this.states.set(ref.id, st);
    }
    return st;
  }

  /** Forgets idle per-conversation and per-team budgets (their totals live on in the counters). */
  private sweep(): void {
    const now = this.deps.clock.now();
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    for (const [id, st] of this.states) {
      if (!st.ref.aggregate || st.queued > 0 || st.running > 0 || st.turns !== undefined) continue;
      if (this.deps.store.usage(id, st.ref.rule, now).used > 0 || this.deps.store.blocked(id, now)) continue;
      this.states.delete(id);
      this.deps.store.forget(id);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const ticket of [...this.tickets]) {
      ticket.fail(new LimitExceeded('limiter', 5_000, 'busy'));
      ticket.wake?.();
    }
    const turns: Array<Promise<void>> = [];
    for (const st of this.states.values()) {
      if (st.restoreTimer) clearTimeout(st.restoreTimer);
      if (st.turns !== undefined) turns.push(st.turns);
    }
    // Every ticket is settled, so each head's turn ends as soon as its store call answers.
    await Promise.all(turns);
    await this.deps.store.close();
  }
}
