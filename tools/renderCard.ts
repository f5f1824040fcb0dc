// Renders Adaptive Card JSON as readable terminal text: titles, facts, tables, columns and numbered buttons.
import { visible } from '../src/infra/visible.js';

export interface RenderedAction {
  n: number;
  title: string;
  type: string;
  verb?: string;
  data?: unknown;
}

export interface RenderedCard {
  text: string;
  actions: RenderedAction[];
}

export interface RenderOptions {
  color?: boolean;
}

/** A card element as read from JSON: any field may be missing or of another type. */
type Node = Partial<Record<string, unknown>>;

const isNode = (x: unknown): x is Node => typeof x === 'object' && x !== null;
const nodes = (x: unknown): Node[] => (Array.isArray(x) ? x.filter(isNode) : []);
const text = (x: unknown): string => (typeof x === 'string' ? x : '');

/**
 * Teams markdown subset -> plain text: bold markers and backslash escapes go. Control characters (a BILL name's ESC [ 2J)
 * are shown escaped, not run by the terminal.
 */
export function plain(text: unknown): string {
  if (typeof text !== 'string') return '';
  return visible(text.replace(/\*\*(.+?)\*\*/g, '$1').replace(/\\([\\`*_[\]<>~#+\-.!|(){}])/g, '$1'), { newlines: true });
}

function visibleLength(s: string): number {
  // ANSI colour codes start with the ESC control character, which is the point of matching it here.
  // eslint-disable-next-line no-control-regex
  return Array.from(s.replace(/\x1b\[[0-9;]*m/g, '')).length;
}

function pad(s: string, width: number, align: string | undefined): string {
  const gap = Math.max(0, width - visibleLength(s));
  return align === 'Right' ? ' '.repeat(gap) + s : s + ' '.repeat(gap);
}

function cellText(cell: unknown): string {
  const items = isNode(cell) ? nodes(cell.items) : [];
  return items
    .map((i) => plain(i.text ?? ''))
    .filter(Boolean)
    .join(' ');
}

export function renderCard(card: unknown, opts: RenderOptions = {}): RenderedCard {
  const color = opts.color ?? false;
  const bold = (s: string) => (color ? `\x1b[1m${s}\x1b[22m` : s);
  const dim = (s: string) => (color ? `\x1b[2m${s}\x1b[22m` : s);
  const red = (s: string) => (color ? `\x1b[31m${s}\x1b[39m` : s);
  const lines: string[] = [];
  const actions: RenderedAction[] = [];

  const addAction = (a: unknown) => {
    if (!isNode(a)) return;
    const n = actions.length + 1;
    actions.push({
      n,
      title: plain(a.title ?? a.type),
      type: text(a.type),
      verb: typeof a.verb === 'string' ? a.verb : undefined,
      data: a.data ?? (a.type === 'Action.OpenUrl' ? a.url : undefined),
    });
  };

  const walk = (el: unknown) => {
    if (!isNode(el) || el.isVisible === false) return;
    switch (el.type) {
      case 'TextBlock': {
        let t = plain(el.text);
        if (el.weight === 'Bolder' || el.size === 'Large' || el.style === 'heading') t = bold(t);
        else if (el.isSubtle) t = dim(t);
        if (el.color === 'Attention') t = red(t);
        if (el.separator) lines.push(dim('─'.repeat(40)));
        lines.push(t);
        break;
      }
      case 'RichTextBlock':
        lines.push(Array.isArray(el.inlines) ? el.inlines.map((i: unknown) => plain(isNode(i) ? i.text : i)).join('') : '');
        break;
      case 'FactSet': {
        const facts = nodes(el.facts);
        const w = Math.max(0, ...facts.map((f) => visibleLength(plain(f.title))));
        for (const f of facts) lines.push(`${pad(plain(f.title), w, 'Left')}  ${plain(f.value)}`);
        break;
      }
      case 'Table': {
        const rows: string[][] = nodes(el.rows).map((r) => (Array.isArray(r.cells) ? r.cells.map(cellText) : []));
        const cols = Math.max(0, ...rows.map((r) => r.length));
        const second = nodes(el.rows).at(1);
        const secondCells: unknown[] = Array.isArray(second?.cells) ? second.cells : [];
        const aligns = Array.from({ length: cols }, (_, i) => {
          const cell = secondCells[i];
          const align = isNode(cell) ? nodes(cell.items).at(0)?.horizontalAlignment : undefined;
          return typeof align === 'string' ? align : undefined;
        });
        const widths = Array.from({ length: cols }, (_, i) => Math.min(40, Math.max(...rows.map((r) => visibleLength(r[i] ?? '')))));
        rows.forEach((r, ri) => {
          const line = widths.map((w, i) => pad((r[i] ?? '').slice(0, 40), w, aligns[i])).join('  ');
          lines.push(ri === 0 && el.firstRowAsHeader !== false ? bold(line) : line);
        });
        break;
      }
      case 'ColumnSet': {
        const cols = nodes(el.columns);
        const parts = cols.map((c) => {
          const sub = renderCard({ body: c.items ?? [] }, { ...opts, color }).text;
          return sub.split('\n').filter(Boolean).join(' ');
        });
        if (el.separator) lines.push(dim('─'.repeat(40)));
        lines.push(parts.filter(Boolean).join('  │  '));
        break;
      }
      case 'Container':
        if (el.separator) lines.push(dim('─'.repeat(40)));
        for (const item of Array.isArray(el.items) ? el.items : []) walk(item);
        if (el.selectAction) addAction(el.selectAction);
        break;
      case 'ActionSet':
        for (const a of Array.isArray(el.actions) ? el.actions : []) addAction(a);
        break;
      case 'Image':
        lines.push(dim(`[image${el.altText ? ': ' + plain(el.altText) : ''}]`));
        break;
      default:
        if (typeof el.type === 'string' && el.type.startsWith('Input.')) {
          lines.push(dim(`[${el.type.slice(6).toLowerCase()} input${el.label ? ': ' + plain(el.label) : ''}]`));
        }
    }
  };

  const c = isNode(card) ? card : {};
  for (const el of Array.isArray(c.body) ? c.body : []) walk(el);
  for (const a of Array.isArray(c.actions) ? c.actions : []) addAction(a);
  if (actions.length > 0) lines.push(actions.map((a) => `[${a.n}] ${a.title}`).join('   '));
  return { text: lines.join('\n'), actions };
}
