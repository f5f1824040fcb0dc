// BENCH_GC_TRACE=1: the bots run under V8's `--trace-gc-nvp`, which prints one line of name=value pairs per
// collection on stdout, and the driver sums those lines per process. What it shows is what decides the memory and
// overhead figures together: how much of what a bot allocates survives long enough to be promoted to the old
// generation, how many full collections (mark-compacts) that cost, and how large the live heap was after each.
const MB = 1024 * 1024;

/** The fields read from a trace line (each preceded by a space, so `promoted=` is not `nodes_promoted=`). */
const FIELD = {
  kind: / gc=(\w+)/,
  pause: / pause=([0-9.]+)/,
  allocated: / allocated=([0-9.]+)/,
  promoted: / promoted=([0-9.]+)/,
  totalSizeAfter: / total_size_after=([0-9.]+)/,
};

export interface GcSummary {
  scavenges: number;
  markCompacts: number;
  /** Bytes allocated, as V8 counts them between collections. */
  allocated: number;
  /** Bytes moved from the young generation to the old one. */
  promoted: number;
  /** Main-thread pause, ms (background marking and sweeping threads are not in it). */
  pauseMs: number;
  /** Heap size after the last and the largest full collection, bytes (≈ the live heap then). */
  liveAfterLastFull: number;
  maxLiveAfterFull: number;
}

export class GcTally {
  private readonly s: GcSummary = {
    scavenges: 0,
    markCompacts: 0,
    allocated: 0,
    promoted: 0,
    pauseMs: 0,
    liveAfterLastFull: 0,
    maxLiveAfterFull: 0,
  };

  /** Takes one stdout line; returns false (and counts nothing) for a line that is not a `--trace-gc-nvp` record. */
  add(line: string): boolean {
    const kind = FIELD.kind.exec(line)?.[1];
    if (!kind) return false;
    const num = (field: RegExp): number => Number(field.exec(line)?.[1] ?? 0);
    if (kind === 's' || kind === 'mmc' || kind === 'mms') this.s.scavenges++;
    else if (kind === 'mc') {
      this.s.markCompacts++;
      const after = num(FIELD.totalSizeAfter);
      this.s.liveAfterLastFull = after;
      this.s.maxLiveAfterFull = Math.max(this.s.maxLiveAfterFull, after);
    } else return false;
    this.s.allocated += num(FIELD.allocated);
    this.s.promoted += num(FIELD.promoted);
    this.s.pauseMs += num(FIELD.pause);
    return true;
  }

  get summary(): GcSummary {
    return { ...this.s };
  }

  get collections(): number {
    return this.s.scavenges + this.s.markCompacts;
  }

  /** One line for the bench's log. */
  describe(): string {
    const s = this.s;
    const share = s.allocated > 0 ? ((100 * s.promoted) / s.allocated).toFixed(1) : '0.0';
    return (
      `${plural(s.scavenges, 'scavenge')}, ${plural(s.markCompacts, 'full collection')}; ${(s.allocated / MB).toFixed(0)} MB allocated, ` +
      `${(s.promoted / MB).toFixed(0)} MB promoted (${share}%); main-thread pause ${(s.pauseMs / 1000).toFixed(1)} s; ` +
      `heap after the last full collection ${(s.liveAfterLastFull / MB).toFixed(0)} MB (largest ${(s.maxLiveAfterFull / MB).toFixed(0)} MB)`
    );
  }
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
