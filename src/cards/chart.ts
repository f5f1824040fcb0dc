// Teams' chart elements (Microsoft's "Charts in Adaptive Cards": Chart.VerticalBar, Chart.HorizontalBar, Chart.Donut),
// each carrying what a host without charts shows instead, so the card reads the same there as it did before charts.
import { shorten, type CardElement, type Json, type TONE_STYLE } from './card.js';

export interface ChartPoint {
  /** Plain text: charts take no markdown, so a name from BILL is shown as typed (one line, shortened). */
  label: string;
  value: number;
  /** One of Teams' chart colours: those of the tones the cards already use in words. */
  color?: (typeof TONE_STYLE)[keyof typeof TONE_STYLE];
}

interface ChartSpec {
  title: string;
  points: ChartPoint[];
  /** What a host without charts shows instead: the same in text, or 'drop' when the card says it elsewhere. */
  fallback: CardElement | 'drop';
  /** One of Teams' named colour sets for a whole chart. */
  colorSet?: 'categorical' | 'sequentialred';
}

/** Chart text on one line, shortened (a longer label crowds a 320 px phone card). */
function chartLabel(text: string): string {
  return shorten(text.replace(/\s+/g, ' ').trim(), 32);
}

/** The chart element; each point's label and value go under the keys the chart type reads (`keys`), thousandths kept (KWD). */
function chart(type: string, spec: ChartSpec, extra: Record<string, Json>, keys: [string, string] = ['x', 'y']): CardElement {
  const [labelKey, valueKey] = keys;
  return {
    type,
    title: chartLabel(spec.title),
    ...(spec.colorSet ? { colorSet: spec.colorSet } : {}),
    ...extra,
    data: spec.points.map((p) => ({
      [labelKey]: chartLabel(p.label),
      [valueKey]: Number.isFinite(p.value) ? Math.round(p.value * 1000) / 1000 : 0,
      ...(p.color ? { color: p.color } : {}),
    })),
    fallback: spec.fallback,
  };
}

/** Bars standing up, one per point (x: the label, y: the value), each bar labelled with its value. */
export function verticalBarChart(spec: ChartSpec & { xAxisTitle: string; yAxisTitle: string }): CardElement {
  const axes = { showBarValues: true, xAxisTitle: chartLabel(spec.xAxisTitle), yAxisTitle: chartLabel(spec.yAxisTitle) };
  return chart('Chart.VerticalBar', spec, axes);
}

/** Bars lying down, one per point, drawn against a shared axis (AbsoluteWithAxis): lengths compare across rows. */
export function horizontalBarChart(spec: ChartSpec): CardElement {
  return chart('Chart.HorizontalBar', spec, { displayMode: 'AbsoluteWithAxis' });
}

/** Slices of one whole, one per point (legend: the label, value: the value). */
export function donutChart(spec: ChartSpec): CardElement {
  return chart('Chart.Donut', spec, {}, ['legend', 'value']);
}

/** Items by currency (USD, BILL's default, for none), USD first: a bar adding dollars to euros is a number nobody owes. */
export function byCurrency<T>(items: readonly T[], currency: (item: T) => string | undefined): Array<[string, T[]]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const c = currency(item);
    const code = c && /^[A-Z]{3}$/.test(c) ? c : 'USD';
    const list = groups.get(code);
    if (list) list.push(item);
    else groups.set(code, [item]);
  }
  return [...groups.entries()].sort(([a], [b]) => (a === 'USD' ? -1 : b === 'USD' ? 1 : a.localeCompare(b)));
}
