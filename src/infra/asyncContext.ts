// Values that follow a call through its awaits (the turn a BILL call counts for, the limiter grant a call runs in,
// where botbuilder's console output goes while a token is checked), all carried by one AsyncLocalStorage.
// Node 20 runs every enabled storage's hook on every promise the process creates, so each extra storage is paid for
// on every await of every turn; one storage whose store holds a slot per value costs what one slot did.
import { AsyncLocalStorage } from 'node:async_hooks';

/** A slot's value, linked to the store around it (a few links deep: one per slot that is set, plus nesting). */
interface Frame {
  readonly key: symbol;
  readonly value: unknown;
  readonly parent: Frame | undefined;
}

const storage = new AsyncLocalStorage<Frame>();

/** One value carried through async calls; slots are independent, as separate AsyncLocalStorages would be. */
export class ContextSlot<T> {
  private readonly key: symbol;

  constructor(name: string) {
    this.key = Symbol(name);
  }

  /** Runs `fn` with this slot set to `value`; every other slot keeps what it holds. */
  run<R>(value: T, fn: () => R): R {
    // A frame in front of the current ones, no copy of them: this runs for every turn and every limited call.
    return storage.run({ key: this.key, value, parent: storage.getStore() }, fn);
  }

  /** The value of the innermost `run` around the caller; undefined outside any. */
  getStore(): T | undefined {
    for (let f = storage.getStore(); f; f = f.parent) if (f.key === this.key) return f.value as T;
    return undefined;
  }
}
