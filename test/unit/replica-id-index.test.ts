// The replicas' number and group indexes keep one id as itself and only a shared key as a Set: adding, removing and
// taking over must answer exactly what a Map of Sets would.
import { describe, expect, it } from 'vitest';
import { IdIndex } from '../../src/bill/replicas.js';

const idsOf = (index: IdIndex, key: string) => [...index.ids(key)].sort();

describe('replica id index', () => {
  it('holds one id per key, then several when a key is shared, and goes back to one as they leave', () => {
    const index = new IdIndex();
    expect(idsOf(index, 'INV-1')).toEqual([]);
    index.add('INV-1', 'a');
    index.add('INV-1', 'a');
    expect(idsOf(index, 'INV-1')).toEqual(['a']);
    index.add('INV-1', 'b');
    index.add('INV-1', 'c');
    expect(idsOf(index, 'INV-1')).toEqual(['a', 'b', 'c']);
    index.delete('INV-1', 'b');
    index.delete('INV-1', 'zzz');
    expect(idsOf(index, 'INV-1')).toEqual(['a', 'c']);
    index.delete('INV-1', 'a');
    expect(idsOf(index, 'INV-1')).toEqual(['c']);
    index.add('INV-1', 'd');
    expect(idsOf(index, 'INV-1')).toEqual(['c', 'd']);
    index.delete('INV-1', 'c');
    index.delete('INV-1', 'd');
    expect(idsOf(index, 'INV-1')).toEqual([]);
    index.add('INV-1', 'e');
    expect(idsOf(index, 'INV-1')).toEqual(['e']);
  });

  it('removing an id a key does not hold changes nothing; other keys are independent', () => {
    const index = new IdIndex();
    index.add('A', '1');
    index.add('B', '2');
    index.add('B', '3');
    index.delete('A', '2');
    index.delete('C', '1');
    expect(idsOf(index, 'A')).toEqual(['1']);
    expect(idsOf(index, 'B')).toEqual(['2', '3']);
  });

  it('takes over what another index holds and forgets its own; clear empties it', () => {
    const mine = new IdIndex();
    mine.add('OLD', 'x');
    const read = new IdIndex();
    read.add('N-1', 'p');
    read.add('N-2', 'q');
    read.add('N-2', 'r');
    mine.takeOver(read);
    expect(idsOf(mine, 'OLD')).toEqual([]);
    expect(idsOf(mine, 'N-1')).toEqual(['p']);
    expect(idsOf(mine, 'N-2')).toEqual(['q', 'r']);
    mine.clear();
    expect(idsOf(mine, 'N-2')).toEqual([]);
  });
});
