// Teams' chart elements (Microsoft's "Charts in Adaptive Cards": Chart.VerticalBar, Chart.HorizontalBar, Chart.Donut),
// each carrying what a host without charts shows instead, so the card reads the same there as it did before charts.
import type { CardElement, Json } from './card.js';

/** Per-point colours Teams' charts take (a subset of its palette: the tones the cards already use in words). */
type ChartColor = 'good' | 'warning' | 'attention' | 'neutral';

/** Teams' named colour sets for a whole chart. */
type ChartColorSet = 'categorical' | 'sequential' | 'sequentialred' | 'sequentialgreen' | 'sequentialyellow' | 'diverging';

/**
 * What a host without charts renders in the chart's place: the element that says the same in text, or 'drop' when the
 * card already says it elsewhere (then such a host shows the card exactly as it was before charts).
 */
type ChartFallback = CardElement | 'drop';

export interface ChartPoint {
  /** Plain text: charts take no markdown, so a name from BILL is shown as typed (one line, shortened). */
  label: string;
  value: number;
  color?: ChartColor;
}

interface ChartSpec {
  title: string;
  points: ChartPoint[];
  fallback: ChartFallback;
  colorSet?: ChartColorSet;
}

/** Longest label a chart shows: an axis or legend label longer than this crowds a 320 px phone card. */
const MAX_LABEL = 32;

/** Chart text: one line, trimmed, shortened with an ellipsis. */
function chartLabel(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_LABEL ? `${flat.slice(0, MAX_LABEL - 1)}…` : flat;
}

/** A figure as the chart plots it: cents kept, nothing that is not a finite number. */
function plotted(value: number): number {
  return Number.isFinite(value) ? Math.round(value * 100) / 100 : 0;
}

function chart(type: string, spec: ChartSpec, extra: Record<string, Json>, data: Json[]): CardElement {
  return {
    type,
    title: chartLabel(spec.title),
    ...(spec.colorSet ? { colorSet: spec.colorSet } : {}),
    ...extra,
    data,
    fallback: spec.fallback,
  };
}

/** Bars standing up, one per point (x: the label, y: the value), each bar labelled with its value. */
export function verticalBarChart(spec: ChartSpec & { xAxisTitle?: string; yAxisTitle?: string }): CardElement {
  const axes: Record<string, Json> = { showBarValues: true };
  if (spec.xAxisTitle) axes.xAxisTitle = chartLabel(spec.xAxisTitle);
  if (spec.yAxisTitle) axes.yAxisTitle = chartLabel(spec.yAxisTitle);
  return chart(
    'Chart.VerticalBar',
    spec,
    axes,
    spec.points.map((p) => ({ x: chartLabel(p.label), y: plotted(p.value), ...(p.color ? { color: p.color } : {}) })),
  );
}

/** Bars lying down, one per point, drawn against a shared axis (AbsoluteWithAxis): lengths compare across rows. */
export function horizontalBarChart(spec: ChartSpec): CardElement {
  return chart(
    'Chart.HorizontalBar',
    spec,
    { displayMode: 'AbsoluteWithAxis' },
    spec.points.map((p) => ({ x: chartLabel(p.label), y: plotted(p.value), ...(p.color ? { color: p.color } : {}) })),
  );
}

/** Slices of one whole, one per point (legend: the label, value: the value). */
export function donutChart(spec: ChartSpec): CardElement {
  return chart(
    'Chart.Donut',
    spec,
    {},
    spec.points.map((p) => ({ legend: chartLabel(p.label), value: plotted(p.value), ...(p.color ? { color: p.color } : {}) })),
  );
}

/** Currency codes as the totals read them: a three-letter code, otherwise USD (BILL's default). */
function currencyCode(currency: string | undefined): string {
  return currency && /^[A-Z]{3}$/.test(currency) ? currency : 'USD';
}

/**
 * Items grouped by currency, USD first then by code, as `moneyTotal` lists them: one chart per currency, because a bar
 * that adds dollars to euros is a number nobody owes.
 */
export function byCurrency<T>(items: readonly T[], currency: (item: T) => string | undefined): Array<[string, T[]]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const code = currencyCode(currency(item));
    const list = groups.get(code) ?? [];
    list.push(item);
    groups.set(code, list);
  }
  return [...groups.entries()].sort(([a], [b]) => (a === 'USD' ? -1 : b === 'USD' ? 1 : a.localeCompare(b)));
}
