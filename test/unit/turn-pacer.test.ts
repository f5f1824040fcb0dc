// A burst of activities starts a few turns per turn of the event loop, in arrival order, so BILL's answers are read
// in between; at ordinary rates a turn starts at once.
import { describe, expect, it } from 'vitest';
import { turnPacer } from '../../src/teams/adapter.js';

const loopTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('turnPacer', () => {
  it('starts a lone turn at once, without waiting for the loop to come round', async () => {
    const pacer = turnPacer(2);
    let started = false;
    void pacer.next().then(() => (started = true));
    await Promise.resolve();
    expect(started).toBe(true);
  });

  it('starts a burst two per loop turn, in the order the activities came', async () => {
    const pacer = turnPacer(2);
    const order: number[] = [];
    const all = Array.from({ length: 9 }, (_, i) => pacer.next().then(() => order.push(i)));
    await Promise.resolve();
    expect(order).toEqual([0, 1]);
    await loopTurn();
    expect(order).toEqual([0, 1, 2, 3]);
    await loopTurn();
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    await Promise.all(all);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('lets I/O that arrived meanwhile run between the batches', async () => {
    const pacer = turnPacer(1);
    const events: string[] = [];
    const turns = Array.from({ length: 3 }, (_, i) => pacer.next().then(() => events.push(`turn ${i}`)));
    // A timer that is due stands for an answer from BILL that is ready to be read (made due before the loop turns).
    setTimeout(() => events.push('io'), 0);
    const due = performance.now() + 3;
    while (performance.now() < due) {
      // the timer becomes due
    }
    await Promise.all(turns);
    expect(events).toEqual(['turn 0', 'io', 'turn 1', 'turn 2']);
    expect(events.indexOf('io')).toBeGreaterThan(0);
    expect(events.indexOf('io')).toBeLessThan(events.length - 1);
  });
});
