// Builds BILL's `filters` query value (field:op:value, comma-joined) so that no user text can change its meaning.
//
// Grammar facts (developer.bill.com /docs/search-op-with-lists, shared/reference/bill-v3-api.md §2):
// - terms are `field:op:value`, joined with commas; operators eq ne gt gte lt lte in nin sw (starts with);
// - date-times and lists are quoted: createdTime:gte:"2025-09-01T00:00:00.000Z", currency:in:"USD,CAD";
// - an unquoted value is split on ':' and ',' (an unquoted time of day breaks the split, a tested finding);
// - there is no documented escape for '"' inside a quoted value.
// So: a value containing ',' or ':' is quoted; '"' and '\' are refused everywhere (no escape exists); list items
// may not contain ',' (it would split the item). Control characters, lone surrogates and over-long text are refused.
import { FilterValueError } from '../errors.js';

export type FilterOp = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'nin' | 'sw';
export type FilterScalar = string | number | boolean;

/** Longest text accepted in one value; longer input is refused rather than cut (a cut name finds other vendors). */
export const MAX_FILTER_VALUE_LENGTH = 500;
export const MAX_FILTER_LIST_ITEMS = 100;

const FIELD = /^[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)*$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Text values (list items too): numbers and booleans are written by us and need no check. */
function checkText(field: string, text: string): void {
  if (text.length === 0) throw new FilterValueError(field, 'empty value');
  if (text.length > MAX_FILTER_VALUE_LENGTH) throw new FilterValueError(field, `value longer than ${MAX_FILTER_VALUE_LENGTH} characters`);
  if (text.includes('"')) throw new FilterValueError(field, 'value contains a double quote');
  if (text.includes('\\')) throw new FilterValueError(field, 'value contains a backslash');
  if (CONTROL.test(text)) throw new FilterValueError(field, 'value contains a control character');
  if (LONE_SURROGATE.test(text)) throw new FilterValueError(field, 'value is not valid Unicode text');
}

function scalarText(field: string, value: FilterScalar): { text: string; quote: boolean } {
  if (typeof value === 'number') {
    const text = String(value);
    if (!Number.isFinite(value) || /e/i.test(text)) throw new FilterValueError(field, 'number out of range');
    return { text, quote: false };
  }
  if (typeof value === 'boolean') return { text: String(value), quote: false };
  checkText(field, value);
  const quote = DATE.test(value) || DATE_TIME.test(value) || /[,:]/.test(value) || value.trim() !== value;
  return { text: value, quote };
}

/** One term, e.g. `dueDate:lte:"2025-01-31"`. Throws FilterValueError instead of emitting anything ambiguous. */
export function filterTerm(field: string, op: FilterOp, value: FilterScalar | readonly FilterScalar[]): string {
  if (!FIELD.test(field)) throw new FilterValueError(field, 'not a field name');
  if (op === 'in' || op === 'nin') {
    const items: readonly FilterScalar[] = Array.isArray(value) ? (value as readonly FilterScalar[]) : [value as FilterScalar];
    if (items.length === 0) throw new FilterValueError(field, 'empty list');
    if (items.length > MAX_FILTER_LIST_ITEMS) throw new FilterValueError(field, `more than ${MAX_FILTER_LIST_ITEMS} list items`);
    const texts = items.map((item) => {
      const { text } = scalarText(field, item);
      if (text.includes(',')) throw new FilterValueError(field, 'list item contains a comma');
      if (text.trim() !== text) throw new FilterValueError(field, 'list item starts or ends with a space');
      return text;
    });
    return `${field}:${op}:"${texts.join(',')}"`;
  }
  if (Array.isArray(value)) throw new FilterValueError(field, `a list needs the in or nin operator, not ${op}`);
  const { text, quote } = scalarText(field, value as FilterScalar);
  if (op === 'sw' && typeof value !== 'string') throw new FilterValueError(field, 'sw needs text');
  return quote ? `${field}:${op}:"${text}"` : `${field}:${op}:${text}`;
}

/** A small immutable-ish builder: `new BillFilter().add('archived', 'eq', false).add('dueDate', 'lte', '2025-01-31').toString()`. */
export class BillFilter {
  private readonly terms: string[] = [];

  add(field: string, op: FilterOp, value: FilterScalar | readonly FilterScalar[]): this {
    this.terms.push(filterTerm(field, op, value));
    return this;
  }
  merge(other: BillFilter | undefined): this {
    if (other) this.terms.push(...other.terms);
    return this;
  }
  /** The `filters` query value; "" when empty (then send no filters parameter). */
  toString(): string {
    return this.terms.join(',');
  }
}

export interface SortKey<F extends string = string> {
  field: F;
  order: 'asc' | 'desc';
}

/** The `sort` query value, e.g. `dueDate:asc,createdTime:desc`. */
export function sortParam(keys: readonly SortKey[]): string {
  const bad = keys.find((k) => !FIELD.test(k.field));
  if (bad) throw new FilterValueError(bad.field, 'not a sortable field name');
  return keys.map((k) => `${k.field}:${k.order}`).join(',');
}

/** A BILL id going into a URL path: letters and digits only, so it can never add a path segment or a query. */
export function checkId(kind: string, id: string): string {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) throw new FilterValueError(`${kind} id`, 'not a BILL id');
  return id;
}
