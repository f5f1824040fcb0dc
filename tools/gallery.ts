// npm run gallery: writes build/gallery.html — every card billbridge sends (demo data, empty and error states),
// rendered in the browser by Microsoft's adaptivecards renderer with Teams' host configs, light and dark, at the width
// Teams gives a card on a phone (320 px) and on the desktop (450 px), so a reviewer sees what a phone shows. That
// renderer draws no Teams charts: a card with charts shows a sketch of each chart's data above the frames, which show
// the chart's fallback as a host without charts lays it out.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { galleryCards, type GalleryCard } from './galleryCards.js';
import { teamsHostConfig, THEME_PAGE } from './hostConfigs.js';

const require = createRequire(import.meta.url);

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
}

/** JSON safe to embed in a <script> block (no "</script>", no U+2028/9 surprises). */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/**
 * Runs in the page: the markdown Teams renders in a TextBlock, enough for these cards: backslash escapes, **bold**,
 * _italic_. Shared by the gallery and the render tests.
 */
export const TEAMS_MARKDOWN_SCRIPT = String.raw`
(function () {
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]; });
  }
  window.AdaptiveCards.AdaptiveCard.onProcessMarkdown = function (text, result) {
    var stash = [];
    var out = String(text).replace(/\\(.)/g, function (_m, c) { stash.push(c); return '\u0000' + (stash.length - 1) + '\u0000'; });
    out = esc(out).replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>').replace(/(^|\s)_([^_]+)_(?=\s|$)/g, '$1<em>$2</em>');
    out = out.replace(/\u0000(\d+)\u0000/g, function (_m, i) { return esc(stash[Number(i)]); });
    result.outputHtml = out;
    result.didProcess = true;
  };
})();
`;

/**
 * Runs in the page: renders every card twice, with the light and the dark host config, and shows the data a clicked
 * button would send. Plain browser JavaScript kept as text (String.raw: backslashes are the regex's own).
 */
const BROWSER_SCRIPT = String.raw`
// Teams' Chart.* elements on a card, in order (the renderer below skips them for their fallbacks).
function chartsOf(node, out) {
  if (Array.isArray(node)) node.forEach(function (n) { chartsOf(n, out); });
  else if (node && typeof node === 'object') {
    if (/^Chart\./.test(String(node.type))) out.push(node);
    else Object.keys(node).forEach(function (k) { chartsOf(node[k], out); });
  }
  return out;
}
// A chart's data as labelled bars: enough to review what Teams will plot (a donut's slices as shares of the whole).
function sketchChart(chart) {
  var box = document.createElement('div');
  box.className = 'chart';
  var head = document.createElement('div');
  head.className = 'chart-title';
  head.textContent = chart.type + ': ' + (chart.title || '') + (chart.fallback === 'drop' ? ' · fallback: none (the card says it elsewhere)' : ' · fallback: ' + chart.fallback.type);
  box.appendChild(head);
  var points = (chart.data || []).map(function (d) { return { label: d.x !== undefined ? d.x : d.legend, value: d.y !== undefined ? d.y : d.value }; });
  var max = Math.max.apply(null, points.map(function (p) { return Math.abs(p.value); }).concat([1e-9]));
  var whole = points.reduce(function (s, p) { return s + p.value; }, 0) || 1;
  points.forEach(function (p) {
    var row = document.createElement('div');
    row.className = 'chart-row';
    var label = document.createElement('span');
    label.className = 'chart-label';
    label.textContent = p.label;
    var bar = document.createElement('span');
    bar.className = 'chart-bar';
    bar.style.width = (100 * Math.abs(p.value) / max).toFixed(1) + '%';
    var value = document.createElement('span');
    value.className = 'chart-value';
    value.textContent = p.value.toLocaleString('en-US') + (chart.type === 'Chart.Donut' ? ' (' + (100 * p.value / whole).toFixed(0) + '%)' : '');
    var track = document.createElement('span');
    track.className = 'chart-track';
    track.appendChild(bar);
    row.appendChild(label);
    row.appendChild(track);
    row.appendChild(value);
    box.appendChild(row);
  });
  return box;
}

function renderGallery(items, hostConfigs) {
  var AC = window.AdaptiveCards;
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]; });
  }
  var main = document.getElementById('cards');
  var clicked = document.getElementById('clicked');
  var group = null;
  items.forEach(function (item) {
    if (item.group !== group) {
      group = item.group;
      var h = document.createElement('h2');
      h.id = encodeURIComponent(group);
      h.textContent = group;
      main.appendChild(h);
    }
    var entry = document.createElement('section');
    entry.className = 'entry';
    entry.innerHTML = '<h3>' + esc(item.name) + '</h3><div class="meta">' + esc(item.summary) + ' · ' + (item.bytes / 1024).toFixed(1) + ' KB</div>';
    chartsOf(item.card, []).forEach(function (chart) { entry.appendChild(sketchChart(chart)); });
    var pair = document.createElement('div');
    pair.className = 'pair';
    [['light', 320], ['light', 450], ['dark', 320], ['dark', 450]].forEach(function (view) {
      var theme = view[0];
      var frame = document.createElement('div');
      frame.className = 'frame ' + theme + ' w' + view[1];
      frame.style.width = view[1] + 'px';
      frame.title = theme + ', ' + view[1] + ' px';
      try {
        var card = new AC.AdaptiveCard();
        card.hostConfig = new AC.HostConfig(hostConfigs[theme]);
        card.onExecuteAction = function (action) {
          clicked.style.display = 'block';
          clicked.textContent = (action.verb ? action.verb + ' ' : '') + JSON.stringify(action.data);
        };
        card.parse(item.card);
        frame.appendChild(card.render());
      } catch (e) {
        frame.innerHTML = '<div class="error">Could not render: ' + esc(e && e.message) + '</div>';
      }
      pair.appendChild(frame);
    });
    entry.appendChild(pair);
    main.appendChild(entry);
  });
}
`;

export function galleryHtml(cards: GalleryCard[], rendererJs: string, title = 'billbridge card gallery'): string {
  const items = cards.map((c) => ({
    group: c.group,
    name: c.name,
    summary: c.reply.summary,
    bytes: Buffer.byteLength(JSON.stringify(c.reply.card)),
    card: c.reply.card,
  }));
  const groups = [...new Set(items.map((i) => i.group))];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
  body { margin: 0; font-family: 'Segoe UI', -apple-system, Roboto, sans-serif; background: #f0f0f0; color: #242424; }
  header { padding: 16px 24px; background: #464775; color: #fff; }
  header h1 { margin: 0; font-size: 20px; font-weight: 600; }
  header p { margin: 4px 0 0; font-size: 13px; opacity: .85; }
  nav { padding: 8px 24px; font-size: 13px; }
  nav a { margin-right: 12px; color: #464775; }
  h2 { margin: 24px 24px 8px; font-size: 16px; }
  .entry { margin: 0 24px 24px; }
  .entry h3 { font-size: 14px; margin: 0 0 4px; }
  .meta { font-size: 12px; color: #616161; margin-bottom: 8px; }
  .pair { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 16px; }
  /* The frame is the card's column in Teams: its width is the card's, nothing is added around it. */
  .frame { border-radius: 6px; overflow: hidden; flex: none; }
  .frame.light { background: ${THEME_PAGE.light.background}; outline: 1px solid ${THEME_PAGE.light.border}; }
  .frame.dark { background: ${THEME_PAGE.dark.background}; outline: 1px solid ${THEME_PAGE.dark.border}; }
  .frame .ac-pushButton { border-radius: 4px; padding: 5px 12px; font-family: inherit; font-size: 14px; font-weight: 600; cursor: pointer; }
  .frame.light .ac-pushButton { background: #fff; color: #242424; border: 1px solid #d1d1d1; }
  .frame.dark .ac-pushButton { background: #2d2c2c; color: #fff; border: 1px solid #666; }
  .error { color: #c4314b; font-size: 12px; }
  .chart { width: 450px; margin-bottom: 8px; padding: 8px 12px; background: #fff; border-radius: 6px; font-size: 12px; }
  .chart-title { font-weight: 600; margin-bottom: 4px; }
  .chart-row { display: flex; align-items: center; gap: 8px; margin: 2px 0; }
  .chart-label { width: 140px; flex: none; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  .chart-track { flex: 1; background: #f0f0f0; height: 10px; }
  .chart-bar { display: block; height: 10px; background: #5b5fc7; }
  .chart-value { width: 120px; flex: none; text-align: right; }
  #clicked { position: fixed; bottom: 12px; right: 12px; max-width: 420px; background: #242424; color: #fff; padding: 8px 12px; border-radius: 6px; font: 12px monospace; display: none; }
</style>
</head>
<body>
<header><h1>${escapeHtml(title)}</h1><p>${items.length} cards · Adaptive Cards 1.5 rendered by Microsoft's adaptivecards renderer with Teams' host configs · light and dark, each at 320 px (phone) and 450 px (desktop) · a card's Teams charts sketched above it, its frames showing their fallbacks · demo organisation, simulated data</p></header>
<nav>${groups.map((g) => `<a href="#${encodeURIComponent(g)}">${escapeHtml(g)}</a>`).join('')}</nav>
<main id="cards"></main>
<div id="clicked"></div>
<script>${rendererJs.replace(/<\/script/gi, '<\\/script')}</script>
<script>${TEAMS_MARKDOWN_SCRIPT}</script>
<script>${BROWSER_SCRIPT}
renderGallery(${scriptJson(items)}, { light: ${scriptJson(teamsHostConfig('light'))}, dark: ${scriptJson(teamsHostConfig('dark'))} });</script>
</body>
</html>
`;
}

/** The renderer's browser bundle, inlined so the page works offline and from file://. */
export function rendererBundle(): string {
  return readFileSync(require.resolve('adaptivecards/dist/adaptivecards.min.js'), 'utf8');
}

function main(): void {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const out = resolve(root, 'build', 'gallery.html');
  const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { version?: string };
  const cards = galleryCards({ version: pkg.version });
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, galleryHtml(cards, rendererBundle()));
  process.stdout.write(`Wrote ${out}: ${cards.length} cards, light and dark, at 320 and 450 px.\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
