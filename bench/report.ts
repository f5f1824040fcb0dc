// What a scenario reports: figures (some with a target and a verdict), details for results.json, and notes.
import { verdict, type Target } from './stats.js';

export interface Figure {
  name: string;
  value: number;
  unit: string;
  /** Decimal places shown. */
  digits?: number;
  target?: Target;
  verdict?: 'PASS' | 'MISS';
}

export interface ScenarioResult {
  id: string;
  title: string;
  /** The settings the scenario ran with (sizes, latency, concurrency...). */
  setup: Record<string, unknown>;
  figures: Figure[];
  /** Everything else measured, for results.json. */
  details: Record<string, unknown>;
  notes: string[];
  /** A small table printed under the scenario (header row first). */
  table?: string[][];
}

export function figure(name: string, value: number, unit: string, digits = 1, target?: Target): Figure {
  return { name, value, unit, digits, target, verdict: target ? verdict(value, target) : undefined };
}

function fmt(value: number, digits: number): string {
  if (!Number.isFinite(value)) return String(value);
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function targetText(f: Figure): string {
  if (!f.target) return '';
  const op = f.target.direction === 'atMost' ? '<=' : '>=';
  return `${op} ${fmt(f.target.value, f.target.value % 1 === 0 ? 0 : 2)}${f.unit && f.unit !== 'x' ? ` ${f.unit}` : f.unit}`;
}

function pad(s: string, n: number, right = false): string {
  return right ? s.padStart(n) : s.padEnd(n);
}

/** The table `npm run bench` prints: one row per figure, its target and PASS/MISS beside it. */
export function renderTable(results: ScenarioResult[]): string {
  const rows: string[][] = [['Scenario', 'Figure', 'Measured', 'Target', '']];
  for (const r of results) {
    r.figures.forEach((f, i) => {
      const value = `${fmt(f.value, f.digits ?? 1)}${f.unit ? (f.unit === '%' || f.unit === 'x' ? f.unit : ` ${f.unit}`) : ''}`;
      rows.push([i === 0 ? r.title : '', f.name, value, targetText(f), f.verdict ?? '']);
    });
  }
  const [header, ...body] = rows;
  const widths = columnWidths(rows);
  const line = (row: string[]) =>
    row
      .map((cell, c) => pad(cell, widths[c] ?? 0, c === 2))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(header ?? []), rule, ...body.map(line)].join('\n');
}

/** A plain table (header row first), columns right-aligned except the first. */
export function renderGrid(rows: string[][], indent = '  '): string {
  // An empty row separates two tables printed under one scenario.
  let block: string[][] = [];
  const blocks = [block];
  for (const row of rows) {
    if (row.length > 0) {
      block.push(row);
    } else {
      block = [];
      blocks.push(block);
    }
  }
  return blocks
    .filter((b) => b.length > 0)
    .map((b) => {
      const widths = columnWidths(b);
      return b
        .map((row) => indent + row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0))).join('  '))
        .join('\n');
    })
    .join('\n\n');
}

/** The width of each column of the first row: its longest cell in any row (a missing cell counts as empty). */
function columnWidths(rows: string[][]): number[] {
  return (rows[0] ?? []).map((_, c) => Math.max(...rows.map((row) => (row[c] ?? '').length)));
}
