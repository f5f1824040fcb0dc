// A small seeded PRNG (mulberry32) so the demo organisation is the same on every start.

export class Prng {
  private state: number;

  constructor(seed: number | string) {
    this.state = typeof seed === 'number' ? seed >>> 0 : hashString(seed);
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  /** One of `items` (which may themselves be undefined: the webhook fuzz picks "no signature" that way). */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** Picks a key by weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as Array<[K, number]>;
    const total = entries.reduce((s, [, w]) => s + w, 0);
    let r = this.next() * total;
    for (const [k, w] of entries) {
      r -= w;
      if (r < 0) return k;
    }
    const last = entries.at(-1);
    if (!last) throw new RangeError('weighted pick without weights');
    return last[0];
  }

  /** Money between min and max with a long tail toward small amounts, in cents precision. */
  money(min: number, max: number): number {
    const r = this.next() ** 2.2;
    return Math.round((min + r * (max - min)) * 100) / 100;
  }

  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [items[i], items[j]] = [items[j] as T, items[i] as T];
    }
    return items;
  }

  /** Letters and digits, e.g. for id suffixes. */
  alnum(length: number): string {
    const chars = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    let s = '';
    for (let i = 0; i < length; i++) s += chars.charAt(Math.floor(this.next() * chars.length));
    return s;
  }

  /** A version-4-shaped UUID (deterministic). */
  uuid(): string {
    const hex = () => Math.floor(this.next() * 16).toString(16);
    let s = '';
    for (let i = 0; i < 32; i++) s += hex();
    return `${s.slice(0, 8)}-${s.slice(8, 12)}-4${s.slice(13, 16)}-${'89ab'[this.int(0, 3)]}${s.slice(17, 20)}-${s.slice(20, 32)}`;
  }
}

function hashString(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}
