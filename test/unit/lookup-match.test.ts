// Reading free text for what it may name: number-like tokens and names, bounded whatever the text.
import { describe, expect, it } from 'vitest';
import { matchName, readText } from '../../src/features/lookup/match.js';

describe('reading a message for numbers', () => {
  it('takes numbers with letters wherever they are, trimmed of punctuation and possessives', () => {
    expect(readText('did we pay ACM-95303? and "INV-20860", (NW-1)').numbers).toEqual(['ACM-95303', 'INV-20860', 'NW-1']);
    expect(readText("<p>Is <b>PIO-63517</b>'s amount right?</p>").numbers).toEqual(['PIO-63517']);
  });

  it('takes a number without letters only after a word that says so, after #, or alone', () => {
    expect(readText('did we pay invoice 1042 in 2026?').numbers).toEqual(['1042']);
    expect(readText('bill no. 77 and #1055, due 2026-03-10, $1,200.50').numbers).toEqual(['77', '1055']);
    expect(readText('1042').numbers).toEqual(['1042']);
    expect(readText('we paid 1042 dollars in 2026').numbers).toEqual([]);
  });

  it('keeps each number once, and at most twenty of a long list', () => {
    expect(readText('ACM-1 acm-1 #ACM-1').numbers).toEqual(['ACM-1']);
    const many = Array.from({ length: 500 }, (_, i) => `X-${i}`).join(' ');
    expect(readText(many).numbers).toHaveLength(20);
  });

  it('reads only the first 8,000 characters of a huge message, quickly', () => {
    const huge = '<at>x</at> "name:sw:\\"a\\" ' + 'a'.repeat(200_000) + ' ACM-95303';
    const started = performance.now();
    const wanted = readText(huge);
    expect(performance.now() - started).toBeLessThan(200);
    expect(wanted.numbers).toEqual([]);
    const markup = '<'.repeat(50_000) + '<at>'.repeat(10_000);
    expect(readText(markup).numbers).toEqual([]);
  });
});

describe('names in a message', () => {
  const wanted = readText("Did Acme's invoice reach Smith, Barney & Co? Ask the Group about Summit.");

  it('a whole name matches, punctuation and case aside', () => {
    expect(matchName('Smith, Barney & Co', wanted)).toBe('whole');
    expect(matchName('ACME', wanted)).toBe('whole');
  });

  it("a name's first word matches when it says something", () => {
    expect(matchName('Acme Office Supplies', wanted)).toBe('word');
    expect(matchName('Summit Print Inc.', wanted)).toBe('word');
  });

  it('common words and other words of a name do not', () => {
    expect(matchName('Group Holdings Ltd', wanted)).toBeUndefined();
    expect(matchName('Northwind Traders', wanted)).toBeUndefined();
    expect(matchName('Office Acme', wanted)).toBeUndefined();
    expect(matchName('', wanted)).toBeUndefined();
  });
});
