import { describe, expect, it } from 'vitest';
import { GcTally } from '../../bench/gcTrace.js';

// Lines as node 20's `--trace-gc-nvp` prints them (shortened to the fields the tally reads, plus a few it skips).
const scavenge = (allocated: number, promoted: number, pause: number) =>
  `[11229:0x13adafd0]       64 ms: pause=${pause} mutator=58.4 gc=s reduce_memory=0 scavenge=1.36 total_size_before=4854040 total_size_after=4287784 allocated=${allocated} promoted=${promoted} new_space_survived=462792 promotion_ratio=0.0%`;
const markCompact = (after: number, allocated: number, promoted: number, pause: number) =>
  `[11229:0x13adafd0]      523 ms: pause=${pause} mutator=2.0 gc=mc reduce_memory=0 total_size_before=19370400 total_size_after=${after} allocated=${allocated} promoted=${promoted}`;

describe('summing V8 --trace-gc-nvp lines', () => {
  it('counts scavenges and full collections, allocation, promotion and pauses', () => {
    const t = new GcTally();
    expect(t.add(scavenge(8_000_000, 1_000_000, 1.5))).toBe(true);
    expect(t.add(scavenge(8_000_000, 3_000_000, 2.5))).toBe(true);
    expect(t.add(markCompact(50_000_000, 4_000_000, 0, 6))).toBe(true);
    expect(t.add(markCompact(40_000_000, 0, 2_000_000, 4))).toBe(true);
    expect(t.summary).toEqual({
      scavenges: 2,
      markCompacts: 2,
      allocated: 20_000_000,
      promoted: 6_000_000,
      pauseMs: 14,
      liveAfterLastFull: 40_000_000,
      maxLiveAfterFull: 50_000_000,
    });
    expect(t.collections).toBe(4);
    expect(t.describe()).toContain('2 scavenges, 2 full collections');
    expect(t.describe()).toContain('(30.0%)');
    expect(t.describe()).toContain('heap after the last full collection 38 MB (largest 48 MB)');
  });

  it('leaves log lines and unknown records to the log tally', () => {
    const t = new GcTally();
    expect(t.add('{"level":30,"msg":"billbridge listening"}')).toBe(false);
    expect(t.add('[1:0x1] 5 ms: pause=0.1 gc=unknown allocated=5')).toBe(false);
    expect(t.add('')).toBe(false);
    expect(t.summary.allocated).toBe(0);
    expect(t.collections).toBe(0);
  });

  it('says one collection in the singular', () => {
    const t = new GcTally();
    t.add(scavenge(1_000, 0, 0.5));
    t.add(markCompact(10_000_000, 0, 0, 2));
    expect(t.describe()).toMatch(/^1 scavenge, 1 full collection;/);
  });
});
