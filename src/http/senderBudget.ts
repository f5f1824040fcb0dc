// How many bytes senders who fail the signature (or token) check may make the bot read and parse: a token bucket per
// source address and one for everybody. A request reserves its declared size before its body is read (an empty bucket
// is a 429); a sender that verifies gets it back, one that fails pays for what it sent. Sources that verified lately
// (BILL's senders) skip the shared bucket, so a flood from many addresses cannot lock BILL out. Behind a reverse proxy
// the per-source bucket becomes one more shared bucket.
import { dropOldest } from '../infra/bounded.js';
import type { Clock } from '../infra/clock.js';

/** Bytes refill at `perSecond` up to `capacity`; a new bucket is full. */
function byteBucket(rate: { capacity: number; perSecond: number }, clock: Clock) {
  let level = rate.capacity;
  let at = 0;
  const refill = () => {
    const now = clock.now();
    level = Math.min(rate.capacity, level + ((now - at) / 1000) * rate.perSecond);
    at = now;
  };
  return {
    take(bytes: number): boolean {
      refill();
      if (level < bytes) return false;
      level -= bytes;
      return true;
    },
    give(bytes: number): void {
      refill();
      level = Math.min(rate.capacity, level + bytes);
    },
    /** Seconds until `bytes` could be taken (asked right after a take of them failed, so the level is current). */
    secondsUntil: (bytes: number) => Math.max(1, Math.ceil((Math.min(bytes, rate.capacity) - level) / rate.perSecond)),
  };
}

// A BILL webhook is a few KB: a source may send 2 maximal bodies at once and 64 KB/s of failures after.
/** Per source address (IPv6: per /64): burst and refill, in bytes. */
const PER_SOURCE = { capacity: 512 * 1024, perSecond: 64 * 1024 };
/** Everybody not lately verified, together. */
const GLOBAL = { capacity: 2 * 1024 * 1024, perSecond: 256 * 1024 };
/** What a request costs at least, however small (headers, a parse, a key lookup). */
const MIN_CHARGE = 4 * 1024;

/** Sources remembered (buckets, verified senders); beyond this the oldest are forgotten. */
const MAX_SOURCES = 10_000;
/** How long a source that delivered a verified event skips the shared bucket. */
const VERIFIED_FOR_MS = 24 * 3_600_000;

/** The address a budget is kept for: IPv4 as is, IPv6 by its /64 (one host can hold a whole /64). */
function sourceOf(address: string | undefined): string {
  const a = (address ?? 'unknown').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
  if (!a.includes(':')) return a;
  const [head = '', tail] = a.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t];
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/** What a request reserved; settle it once the receiver has answered. */
interface Reservation {
  source: string;
  bytes: number;
  global: boolean;
}

/** The budget on `clock`, the app's: buckets refill, and verified senders' passes end, as it moves. */
export function senderBudget(clock: Clock) {
  const sources = new Map<string, ReturnType<typeof byteBucket>>();
  const verified = new Map<string, number>();
  const shared = byteBucket(GLOBAL, clock);

  /** Gives `bytes` back: all of them when neither verified nor refused (store trouble, unreadable after a good signature). */
  const release = (r: Reservation, bytes = r.bytes): void => {
    sources.get(r.source)?.give(bytes);
    if (r.global) shared.give(bytes);
  };

  return {
    /** Reserves `declared` bytes (or `max` when the length is not declared) for `address`; a refusal says when to retry. */
    reserve(address: string | undefined, declared: number | undefined, max: number): Reservation | { retryAfterS: number } {
      const source = sourceOf(address);
      const bytes = Math.max(MIN_CHARGE, declared ?? max);
      let bucket = sources.get(source);
      if (!bucket) {
        bucket = byteBucket(PER_SOURCE, clock);
        sources.set(source, bucket);
        if (sources.size > MAX_SOURCES) dropOldest(sources);
      }
      if (!bucket.take(bytes)) return { retryAfterS: bucket.secondsUntil(bytes) };
      const global = (verified.get(source) ?? 0) <= clock.now();
      if (global && !shared.take(bytes)) {
        bucket.give(bytes);
        return { retryAfterS: shared.secondsUntil(bytes) };
      }
      return { source, bytes, global };
    },

    /** The signature verified: everything reserved goes back, and the source skips the shared bucket for a while. */
    verifiedSender(r: Reservation): void {
      release(r);
      verified.delete(r.source);
      verified.set(r.source, clock.now() + VERIFIED_FOR_MS);
      if (verified.size > MAX_SOURCES) dropOldest(verified);
    },

    /** The signature failed after `read` bytes (never more than reserved: Node ends a body at its Content-Length): the sender pays. */
    failedSender(r: Reservation, read: number): void {
      const owed = Math.max(MIN_CHARGE, read);
      if (owed < r.bytes) release(r, r.bytes - owed);
    },

    release,
  };
}
