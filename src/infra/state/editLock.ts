// One change at a time to a stored record (get, change, set), on one instance or a fleet: the state stores have no
// compare-and-set, so a change holds a short lease taken with setIfAbsent (atomic in SQLite and in Redis) and others
// wait for it in short steps. A holder that died keeps it EDIT_LOCK_MS at most; after ~2 s of waiting the change is
// made anyway.
import { setTimeout as delay } from 'node:timers/promises';
import type { Clock } from '../clock.js';
import type { StateStore } from './types.js';

/** How long a change holds its record at most. */
const EDIT_LOCK_MS = 5_000;
const EDIT_WAIT_STEP_MS = 25;
const EDIT_WAIT_STEPS = 80;

/** Runs `change` while holding the lease `lockKey` of namespace `ns` (a namespace that entries() readers know of, or one of its own). */
export async function withEditLock<T>(
  deps: { store: Pick<StateStore, 'setIfAbsent' | 'delete'>; clock: Clock },
  ns: string,
  lockKey: string,
  change: () => Promise<T>,
): Promise<T> {
  let held = false;
  for (let step = 0; step < EDIT_WAIT_STEPS; step++) {
    held = await deps.store.setIfAbsent(ns, lockKey, deps.clock.now(), { ttlMs: EDIT_LOCK_MS });
    if (held) break;
    await delay(EDIT_WAIT_STEP_MS);
  }
  try {
    return await change();
  } finally {
    if (held) await deps.store.delete(ns, lockKey).catch(() => undefined);
  }
}
