// The filter builder speaks BILL's grammar and never lets typed text change what a query means.
import { describe, expect, it } from 'vitest';
import { BillFilter, checkId, filterTerm, MAX_FILTER_VALUE_LENGTH, sortParam } from '../../src/bill/filters.js';
import { FilterValueError } from '../../src/errors.js';

describe('BILL filter grammar', () => {
  it('writes field:op:value terms joined with commas, quoting dates and lists', () => {
    const f = new BillFilter()
      .add('archived', 'eq', false)
      .add('dueDate', 'lte', '2025-01-31')
      .add('paymentStatus', 'in', ['UNPAID', 'SCHEDULED'])
      .add('vendorId', 'eq', '00901ABC');
    expect(f.toString()).toBe('archived:eq:false,dueDate:lte:"2025-01-31",paymentStatus:in:"UNPAID,SCHEDULED",vendorId:eq:00901ABC');
  });

  it('quotes date-times (as a Date writes them), and writes numbers plainly', () => {
    expect(filterTerm('createdTime', 'gte', '2025-09-01T00:00:00.000Z')).toBe('createdTime:gte:"2025-09-01T00:00:00.000Z"');
    expect(filterTerm('createdTime', 'lt', new Date(Date.UTC(2025, 9, 1)).toISOString())).toBe('createdTime:lt:"2025-10-01T00:00:00.000Z"');
    expect(filterTerm('amount', 'gte', 100.5)).toBe('amount:gte:100.5');
  });

  it('leaves plain names unquoted and quotes names with commas or colons', () => {
    expect(filterTerm('name', 'sw', 'Acme')).toBe('name:sw:Acme');
    expect(filterTerm('name', 'sw', 'Smith, Barney & Co')).toBe('name:sw:"Smith, Barney & Co"');
    expect(filterTerm('name', 'eq', 'Ratio 3:1 Labs')).toBe('name:eq:"Ratio 3:1 Labs"');
    expect(filterTerm('name', 'sw', 'Café Lumière')).toBe('name:sw:Café Lumière');
  });

  it('refuses a double quote anywhere, since BILL has no escape for it', () => {
    expect(() => filterTerm('name', 'sw', 'a",b:c')).toThrow(FilterValueError);
    expect(() => filterTerm('name', 'eq', '"quoted"')).toThrow(/double quote/);
    expect(() => new BillFilter().add('vendorId', 'in', ['ok', 'x"y'])).toThrow(FilterValueError);
  });

  it('refuses list items that would split the list, and empty lists', () => {
    expect(() => filterTerm('vendorId', 'in', ['a,b'])).toThrow(/comma/);
    expect(() => filterTerm('vendorId', 'in', [])).toThrow(/empty list/);
  });

  it('refuses backslashes, control characters, lone surrogates, empty and over-long text', () => {
    expect(() => filterTerm('name', 'sw', 'a\\b')).toThrow(/backslash/);
    expect(() => filterTerm('name', 'sw', 'line\nbreak')).toThrow(/control/);
    expect(() => filterTerm('name', 'sw', 'bad \uD800 text')).toThrow(/Unicode/);
    expect(() => filterTerm('name', 'sw', '')).toThrow(/empty/);
    expect(filterTerm('name', 'sw', 'x'.repeat(MAX_FILTER_VALUE_LENGTH))).toHaveLength(`name:sw:`.length + MAX_FILTER_VALUE_LENGTH);
    expect(() => filterTerm('name', 'sw', 'x'.repeat(MAX_FILTER_VALUE_LENGTH + 1))).toThrow(/longer than/);
  });

  it('keeps emoji and other astral characters intact', () => {
    expect(filterTerm('name', 'sw', 'Rocket 🚀 Labs')).toBe('name:sw:Rocket 🚀 Labs');
  });

  it('refuses bad field names and value types', () => {
    expect(() => filterTerm('name,archived', 'eq', 'x')).toThrow(FilterValueError);
    expect(() => filterTerm('amount', 'eq', Number.NaN)).toThrow(/range/);
    expect(() => filterTerm('amount', 'eq', 1e21)).toThrow(/range/);
    expect(() => filterTerm('amount', 'sw', 5)).toThrow(/text/);
    expect(() => filterTerm('vendorId', 'eq', ['a'])).toThrow(/in or nin/);
  });

  it('writes sort keys and refuses a field name that is not one', () => {
    expect(
      sortParam([
        { field: 'dueDate', order: 'asc' },
        { field: 'createdTime', order: 'desc' },
      ]),
    ).toBe('dueDate:asc,createdTime:desc');
    expect(() => sortParam([{ field: 'dueDate:asc,x', order: 'asc' }])).toThrow(FilterValueError);
  });

  it('lets only id-shaped text into a URL path', () => {
    expect(checkId('bill', '00n01ABCdef')).toBe('00n01ABCdef');
    for (const bad of ['../login', '00n?max=1', 'a/b', '', 'x'.repeat(65), '00n 01'])
      expect(() => checkId('bill', bad)).toThrow(FilterValueError);
  });
});
