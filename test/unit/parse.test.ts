// The command parser copes with what Teams really sends and never guesses wildly.
import { describe, expect, it } from 'vitest';
import { normalizeCommandText, parseCommandLine } from '../../src/features/parse.js';

const names = ['help', 'bills due', 'bills overdue', 'bill', 'invoice', 'invoices overdue', 'vendor', 'status'];

describe('normalizing Teams text', () => {
  it.each([
    ['<at>billbridge</at> help', 'help'],
    ['<p><at>billbridge</at>&nbsp;Bills&nbsp;due 14!</p>', 'Bills due 14'],
    ['bills due <at>billbridge</at> 14', 'bills due 14'],
    ['&lt;at&gt;billbridge&lt;/at&gt; help', 'help'],
    ['   help   ', 'help'],
    ['help?!', 'help'],
    ['@billbridge help', 'help'],
    ['/help', 'help'],
    ['vendor Smith &amp; Sons', 'vendor Smith & Sons'],
    ['invoice\u200B 1042', 'invoice 1042'],
    ['<div>bills<br/>due</div>', 'bills due'],
    ['', ''],
    ['<at>billbridge</at>', ''],
  ])('%j -> %j', (raw, expected) => {
    expect(normalizeCommandText(raw)).toBe(expected);
  });
});

describe('matching commands', () => {
  it('takes the longest registered name and keeps argument case', () => {
    expect(parseCommandLine('<at>billbridge</at> BILLS DUE 14', names)).toEqual({
      kind: 'command',
      name: 'bills due',
      args: ['14'],
      argText: '14',
    });
    expect(parseCommandLine('bill INV-778', names)).toEqual({ kind: 'command', name: 'bill', args: ['INV-778'], argText: 'INV-778' });
    expect(parseCommandLine('vendor  Acme   Supply', names)).toEqual({
      kind: 'command',
      name: 'vendor',
      args: ['Acme', 'Supply'],
      argText: 'Acme Supply',
    });
  });
  it('does not match a word that only starts like a command', () => {
    expect(parseCommandLine('billing', names).kind).toBe('unknown');
    expect(parseCommandLine('helpme', names).kind).toBe('unknown');
  });
  it('says empty for a bare mention and too long for a wall of text', () => {
    expect(parseCommandLine('<at>billbridge</at>', names)).toEqual({ kind: 'empty' });
    expect(parseCommandLine('x'.repeat(10_000), names).kind).toBe('tooLong');
    expect(parseCommandLine('help ' + 'y '.repeat(800), names).kind).toBe('tooLong');
  });
  it('suggests the closest command for typos', () => {
    expect(parseCommandLine('hlep', names)).toMatchObject({ kind: 'unknown', suggestion: 'help' });
    expect(parseCommandLine('bils due', names)).toMatchObject({ kind: 'unknown', suggestion: 'bills due' });
    expect(parseCommandLine('invoise 1042', names)).toMatchObject({ kind: 'unknown', suggestion: 'invoice' });
    expect(parseCommandLine('statsu', names)).toMatchObject({ kind: 'unknown', suggestion: 'status' });
  });
  it('suggests nothing for text that resembles no command', () => {
    expect(parseCommandLine('what is the weather', names)).toMatchObject({ kind: 'unknown', suggestion: undefined });
    expect(parseCommandLine('🙂🙂🙂', names)).toMatchObject({ kind: 'unknown', suggestion: undefined });
  });
});
