// List queries as BILL reads them: `max`, `sort`, `filters` (field:op:value, comma-joined, quoted dates and lists)
// and cursors. This parser is written independently of src/bill/filters.ts so the tests check one against the other.

export type Op = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'nin' | 'sw';
const OPS: readonly Op[] = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'sw'];

type FieldType = 'string' | 'date' | 'datetime' | 'number' | 'boolean';

/** A record's own property `key`, or undefined when the record is not an object. */
export function prop(item: unknown, key: string): unknown {
  return typeof item === 'object' && item !== null ? (item as Partial<Record<string, unknown>>)[key] : undefined;
}

/** The value at a dotted path ('a.0.b') inside a record, or undefined where the path leaves it. */
export const at = (item: unknown, path: string): unknown => path.split('.').reduce(prop, item);

/** Primitive sort and filter values as text (objects as JSON, never "[object Object]"). */
const text = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

export interface FieldSpec {
  type: FieldType;
  ops: readonly Op[];
  /** Reads the value from a record (default: the property of the same name). */
  get?: (item: unknown) => unknown;
  /** `sw`/`eq` comparisons ignore case (names). */
  caseInsensitive?: boolean;
}

export interface ListSpec {
  filterable: Record<string, FieldSpec>;
  /** Field name -> reader. */
  sortable: Record<string, (item: unknown) => unknown>;
  defaultSort: { field: string; order: 'asc' | 'desc' };
  maxPageSize: number;
  defaultPageSize: number;
}

export class QueryError extends Error {}

export interface Term {
  field: string;
  op: Op;
  value: string;
  quoted: boolean;
}

const FIELD = /^[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)*$/;

/** Splits `a:eq:1,b:in:"x,y",c:gte:"2025-01-01T00:00:00Z"` into terms; anything ambiguous is an error, never a guess. */
export function parseFilters(raw: string): Term[] {
  const terms: Term[] = [];
  let i = 0;
  const readUntilColon = (what: string): string => {
    const end = raw.indexOf(':', i);
    if (end < 0) throw new QueryError(`Invalid filter: missing ${what}`);
    const part = raw.slice(i, end);
    i = end + 1;
    return part;
  };
  while (i < raw.length) {
    const field = readUntilColon('operator');
    if (!FIELD.test(field)) throw new QueryError(`Invalid filter field "${field.slice(0, 40)}"`);
    const op = readUntilColon('value') as Op;
    if (!OPS.includes(op)) throw new QueryError(`Invalid filter operator "${op.slice(0, 10)}"`);
    let value: string;
    let quoted = false;
    if (raw[i] === '"') {
      const close = raw.indexOf('"', i + 1);
      if (close < 0) throw new QueryError('Invalid filter: unterminated quoted value');
      value = raw.slice(i + 1, close);
      quoted = true;
      i = close + 1;
      if (i < raw.length && raw[i] !== ',') throw new QueryError('Invalid filter: text after a quoted value');
    } else {
      const comma = raw.indexOf(',', i);
      const end = comma < 0 ? raw.length : comma;
      value = raw.slice(i, end);
      i = end;
      if (value.includes(':') || value.includes('"'))
        throw new QueryError('Invalid filter: an unquoted value may not contain ":" or a quote');
    }
    if (value === '') throw new QueryError(`Invalid filter: empty value for ${field}`);
    terms.push({ field, op, value, quoted });
    if (i < raw.length) {
      // raw[i] === ','
      i++;
      if (i === raw.length) throw new QueryError('Invalid filter: trailing comma');
    }
  }
  return terms;
}

function typed(type: FieldType, raw: string, field: string): string | number | boolean {
  switch (type) {
    case 'number': {
      if (!/^-?\d+(\.\d+)?$/.test(raw)) throw new QueryError(`Invalid number for ${field}`);
      return Number(raw);
    }
    case 'boolean': {
      if (raw !== 'true' && raw !== 'false') throw new QueryError(`Invalid boolean for ${field}`);
      return raw === 'true';
    }
    case 'date': {
      // yyyy-MM-dd, or a date-time whose date part is used.
      if (!/^\d{4}-\d{2}-\d{2}(T.*)?$/.test(raw) || Number.isNaN(Date.parse(raw.slice(0, 10))))
        throw new QueryError(`Invalid date for ${field}`);
      return raw.slice(0, 10);
    }
    case 'datetime': {
      const ms = Date.parse(raw);
      if (!/^\d{4}-\d{2}-\d{2}/.test(raw) || Number.isNaN(ms)) throw new QueryError(`Invalid date-time for ${field}`);
      return ms;
    }
    default:
      return raw;
  }
}

function comparable(type: FieldType, v: unknown): string | number | boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (type === 'datetime') return typeof v === 'string' ? Date.parse(v) : (v as number);
  if (type === 'date') return text(v).slice(0, 10);
  return v as string | number | boolean;
}

/** Checks every term against the spec (unknown field or operator -> QueryError) and returns a predicate. */
export function compileFilters(terms: Term[], spec: ListSpec): (item: unknown) => boolean {
  const checks = terms.map((t) => {
    const fs = spec.filterable[t.field];
    if (!fs) throw new QueryError(`Field "${t.field}" is not filterable`);
    if (!fs.ops.includes(t.op)) throw new QueryError(`Operator "${t.op}" is not supported for ${t.field}`);
    const get = fs.get ?? ((item: unknown) => prop(item, t.field));
    const fold = (s: unknown) => (fs.caseInsensitive && typeof s === 'string' ? s.toLocaleLowerCase('en-US') : s);
    // A reader may return several values (an S&E record answers to its id and its uuid): any one may match.
    const values = (item: unknown) => {
      const r = get(item);
      return (Array.isArray(r) ? r : [r]).map((v) => fold(comparable(fs.type, v)));
    };
    if (t.op === 'in' || t.op === 'nin') {
      const set = new Set(t.value.split(',').map((p) => fold(typed(fs.type, p, t.field))));
      return (item: unknown) => {
        const hit = values(item).some((v) => set.has(v));
        return t.op === 'in' ? hit : !hit;
      };
    }
    if (t.op === 'sw') {
      if (fs.type !== 'string') throw new QueryError(`Operator "sw" needs a text field, not ${t.field}`);
      const prefix = fold(t.value) as string;
      return (item: unknown) => {
        const v = fold(get(item));
        return typeof v === 'string' && v.startsWith(prefix);
      };
    }
    const want = fold(typed(fs.type, t.value, t.field));
    if (t.op === 'eq') return (item: unknown) => values(item).some((v) => v === want);
    if (t.op === 'ne') return (item: unknown) => values(item).every((v) => v !== want);
    const w = want as string | number | boolean;
    return (item: unknown) => {
      const v = fold(comparable(fs.type, get(item))) as string | number | boolean | undefined | null;
      if (v === undefined || v === null) return false;
      switch (t.op) {
        case 'gt':
          return v > w;
        case 'gte':
          return v >= w;
        case 'lt':
          return v < w;
        case 'lte':
          return v <= w;
        default:
          return false;
      }
    };
  });
  return (item) => checks.every((c) => c(item));
}

export interface SortKey {
  field: string;
  order: 'asc' | 'desc';
}

export function parseSort(raw: string | undefined, spec: ListSpec): SortKey[] {
  if (!raw) return [spec.defaultSort];
  return raw.split(',').map((part) => {
    const [field, order, extra] = part.split(':');
    if (!field || extra !== undefined || (order !== undefined && order !== 'asc' && order !== 'desc'))
      throw new QueryError(`Invalid sort "${part.slice(0, 40)}"`);
    if (!spec.sortable[field]) throw new QueryError(`Field "${field}" is not sortable`);
    return { field, order: order ?? 'asc' };
  });
}

function cmp(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === undefined || a === null) return -1;
  if (b === undefined || b === null) return 1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return text(a) < text(b) ? -1 : 1;
}

/** A total order: the sort keys, then the id. */
export function comparator<T extends { id: string }>(keys: SortKey[], spec: ListSpec): (a: T, b: T) => number {
  const readers = keys.map((k) => {
    const get = spec.sortable[k.field];
    if (!get) throw new QueryError(`Field "${k.field}" is not sortable`);
    return { get, order: k.order };
  });
  return (a, b) => {
    for (const { get, order } of readers) {
      const c = cmp(get(a), get(b));
      if (c !== 0) return order === 'asc' ? c : -c;
    }
    return cmp(a.id, b.id);
  };
}

export function parseMax(raw: string | undefined, spec: ListSpec): number {
  if (raw === undefined || raw === '') return spec.defaultPageSize;
  if (!/^-?\d+$/.test(raw)) throw new QueryError('max must be a whole number');
  const n = Number(raw);
  if (n < 1 || n > spec.maxPageSize) throw new QueryError(`max must be between 1 and ${spec.maxPageSize}`);
  return n;
}

/** An opaque keyset cursor: after/before (sort values, id), bound to the query it came from. */
interface Cursor {
  d: 'n' | 'p';
  id: string;
  q: string;
}

const enc = (c: Cursor) => Buffer.from(JSON.stringify(c)).toString('base64url');
function dec(raw: string, fingerprint: string): Cursor {
  let c: unknown;
  try {
    c = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw new QueryError('Invalid page');
  }
  const [d, id, q] = [prop(c, 'd'), prop(c, 'id'), prop(c, 'q')];
  if ((d !== 'n' && d !== 'p') || typeof id !== 'string' || q !== fingerprint) throw new QueryError('Invalid page');
  return { d, id, q };
}

/**
 * One AP/AR page over a sorted, filtered array. Keyset cursors keep every row exactly once even when rows are
 * added or removed between pages.
 */
export function keysetPage<T extends { id: string }>(
  sorted: T[],
  compare: (a: T, b: T) => number,
  byId: (id: string) => T | undefined,
  opts: { max: number; page?: string; fingerprint: string },
): { nextPage?: string; prevPage?: string; results: T[] } {
  let start = 0;
  let end: number;
  if (opts.page) {
    const c = dec(opts.page, opts.fingerprint);
    const anchor = byId(c.id);
    if (!anchor) throw new QueryError('Invalid page');
    // First row after the anchor (next) or the row at the anchor (prev page ends before it).
    let pos = lowerBound(sorted, anchor, compare);
    if (c.d === 'n') {
      const row = sorted[pos];
      if (row !== undefined && compare(row, anchor) === 0) pos++;
      start = pos;
      end = Math.min(sorted.length, start + opts.max);
    } else {
      end = pos;
      start = Math.max(0, end - opts.max);
    }
  } else {
    end = Math.min(sorted.length, opts.max);
  }
  const results = sorted.slice(start, end);
  const [first, last] = [results.at(0), results.at(-1)];
  return {
    nextPage: end < sorted.length && last ? enc({ d: 'n', id: last.id, q: opts.fingerprint }) : undefined,
    prevPage: start > 0 && first ? enc({ d: 'p', id: first.id, q: opts.fingerprint }) : undefined,
    results,
  };
}

function lowerBound<T extends object>(sorted: T[], x: T, compare: (a: T, b: T) => number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const row = sorted[mid];
    if (row !== undefined && compare(row, x) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Spend & Expense cursors: base64 of "arrayconnection:<offset>" (GraphQL Relay style, as seen from the real API). */
export function offsetPage<T>(
  items: T[],
  opts: { max: number; nextPage?: string; prevPage?: string },
): { nextPage?: string; prevPage?: string; results: T[] } {
  const read = (raw: string) => {
    const m = /^arrayconnection:(\d+)$/.exec(Buffer.from(raw, 'base64').toString('utf8'));
    if (!m) throw new QueryError('Invalid cursor');
    return Number(m[1]);
  };
  let start = 0;
  if (opts.nextPage) start = read(opts.nextPage);
  else if (opts.prevPage) start = Math.max(0, read(opts.prevPage) - opts.max);
  const results = items.slice(start, start + opts.max);
  const end = start + results.length;
  const cur = (n: number) => Buffer.from(`arrayconnection:${n}`).toString('base64');
  return {
    nextPage: end < items.length ? cur(end) : undefined,
    prevPage: start > 0 ? cur(start) : undefined,
    results,
  };
}
