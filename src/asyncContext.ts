// Values that follow a call through its awaits (the turn a BILL call counts for, the limiter grant a call runs in,
// where botbuilder's console output goes while a token is checked), all carried by one AsyncLocalStorage.
// Node 20 runs every enabled storage's hook on every promise the process creates, so each extra storage is paid for
// on every await of every turn; one storage whose store holds a slot per value costs what one slot did.
import { AsyncLocalStorage } from 'node:async_hooks';

type Store = Readonly<Record<symbol, unknown>>;

const storage = new AsyncLocalStorage<Store>();

/** One value carried through async calls; slots are independent, as separate AsyncLocalStorages would be. */
export class ContextSlot<T> {
  private readonly key: symbol;

  constructor(name: string) {
    this.key = Symbol(name);
  }

  /** Runs `fn` with this slot set to `value`; every other slot keeps what it holds. */
  run<R>(value: T, fn: () => R): R {
    return storage.run({ ...storage.getStore(), [this.key]: value }, fn);
  }

  /** The value of the innermost `run` around the caller; undefined outside any. */
  getStore(): T | undefined {
    return storage.getStore()?.[this.key] as T | undefined;
  }
}
