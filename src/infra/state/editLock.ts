// One change at a time to a stored record (get, change, set), on one instance or a fleet: the stores have no compare-
// and-set, so a change holds a short lease (setIfAbsent, atomic in both) and others wait in short steps (whileHeld: give
// up at once). A dead holder keeps it EDIT_LOCK_MS at most; after ~2 s of waiting the change is made anyway, unless the
// caller's EditLease says what to throw instead (a webhooks setup must never run twice).
import { setTimeout as delay } from 'node:timers/promises';
import type { Clock } from '../clock.js';
import { NS, type StateStore } from './types.js';

/** How long a change holds its record at most. */
const EDIT_LOCK_MS = 5_000;
const EDIT_WAIT_STEP_MS = 25;
const EDIT_WAIT_STEPS = 80;

/** A longer change: the lease's most, how long others wait, and what one that ran out throws (else it changes anyway). */
export interface EditLease {
  leaseMs: number;
  waitMs: number;
  busy?: () => Error;
}

/**
 * Runs `change` while holding the lease of record `key` of namespace `ns`. The lease is kept in NS.editLocks (so the
 * record's own namespace holds records only), unless `at` names where (approval cards keep theirs beside the cards).
 */
export async function withEditLock<T>(
  deps: { store: Pick<StateStore, 'setIfAbsent' | 'delete'>; clock: Clock },
  record: { ns: string; key: string } | { at: { ns: string; key: string } },
  change: () => Promise<T>,
  lease?: EditLease,
): Promise<T> {
  const { ns, key: lockKey } = 'at' in record ? record.at : { ns: NS.editLocks, key: `${record.ns}|${record.key}` };
  const ttlMs = lease?.leaseMs ?? EDIT_LOCK_MS;
  const steps = lease ? Math.ceil(lease.waitMs / EDIT_WAIT_STEP_MS) : EDIT_WAIT_STEPS;
  let held = false;
  for (let step = 0; step < steps; step++) {
    held = await deps.store.setIfAbsent(ns, lockKey, deps.clock.now(), { ttlMs });
    if (held) break;
    await delay(EDIT_WAIT_STEP_MS);
  }
  if (!held && lease?.busy) throw lease.busy();
  return held ? releasing(deps.store, { ns, key: lockKey }, change) : change();
}

/** Runs `fn` holding `at` (for at most `ttlMs`, in case the holder dies); undefined, without running it, when it is held already. */
export async function whileHeld<T>(
  store: Pick<StateStore, 'setIfAbsent' | 'delete'>,
  clock: Clock,
  at: { ns: string; key: string },
  ttlMs: number,
  fn: () => Promise<T>,
): Promise<T | undefined> {
  if (!(await store.setIfAbsent(at.ns, at.key, clock.now(), { ttlMs }))) return undefined;
  return releasing(store, at, fn);
}

async function releasing<T>(store: Pick<StateStore, 'delete'>, at: { ns: string; key: string }, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } finally {
    await store.delete(at.ns, at.key).catch(() => undefined);
  }
}
