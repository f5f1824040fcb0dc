// Lays cards out with Microsoft's adaptivecards renderer in headless Chromium, with Teams' host configs, and reads the
// laid-out page back: amounts or words broken across lines, text cut off, colours below WCAG contrast, a card wider
// than its column, elements the renderer dropped without a fallback.
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { TEAMS_MARKDOWN_SCRIPT } from '../../tools/gallery.js';
import { teamsHostConfig, THEME_PAGE, type TeamsTheme } from '../../tools/hostConfigs.js';

const require = createRequire(import.meta.url);

export interface RenderCase {
  theme: TeamsTheme;
  /** The width Teams gives the card, in CSS px (450 desktop chat/channel, 320 a phone). */
  width: number;
}

/**
 * Runs in the page. Renders one card per case into a box of the case's width and reports what reads wrong, one string
 * per problem. Plain browser JavaScript kept as text so no bundler helper leaks into the page.
 */
const CHECK_SCRIPT = String.raw`
window.checkCard = function (cardJson, cases, hostConfigs, pages) {
  var AC = window.AdaptiveCards;
  // Money as the cards write it with Intl: $1,250.00, -$5.00, CA$1,200.00, €1,200.00, 1.200,00 €, USD 12.00.
  var MONEY = /(?:[A-Z]{1,3})?[$€£¥₹]\s?-?\d[\d,.\u00a0\u202f]*\d|-?\d[\d,.\u00a0\u202f]*\d\s?[$€£¥₹]|\b[A-Z]{3}[\s\u00a0]-?\d[\d,.]*\d/g;
  function parseColor(c) {
    var m = /rgba?\(([^)]+)\)/.exec(c);
    if (!m) return null;
    var p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  }
  function over(top, under) {
    var a = top.a;
    return { r: top.r * a + under.r * (1 - a), g: top.g * a + under.g * (1 - a), b: top.b * a + under.b * (1 - a), a: 1 };
  }
  function lum(c) {
    function ch(v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }
    return 0.2126 * ch(c.r) + 0.7152 * ch(c.g) + 0.0722 * ch(c.b);
  }
  function ratio(a, b) {
    var la = lum(a), lb = lum(b);
    return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
  }
  function background(el, pageBg) {
    var layers = [];
    for (var n = el; n && n.nodeType === 1; n = n.parentElement) {
      var c = parseColor(getComputedStyle(n).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    var bg = pageBg;
    for (var i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return bg;
  }
  function lines(range) {
    var tops = [];
    var rects = range.getClientRects();
    for (var i = 0; i < rects.length; i++) {
      if (rects[i].width < 0.5) continue;
      var t = rects[i].top;
      if (!tops.some(function (x) { return Math.abs(x - t) < 3; })) tops.push(t);
    }
    return tops.length;
  }
  // The part of a range that some clipping ancestor hides (text-overflow: ellipsis, overflow: hidden).
  function clipped(range, el) {
    var r = range.getBoundingClientRect();
    for (var n = el; n && n.nodeType === 1; n = n.parentElement) {
      var s = getComputedStyle(n);
      if (s.overflowX !== 'visible' || s.textOverflow === 'ellipsis') {
        var b = n.getBoundingClientRect();
        if (r.right > b.right + 1 || r.left < b.left - 1) return true;
      }
      if (n.classList && n.classList.contains('ac-adaptiveCard')) break;
    }
    return false;
  }
  function jsonTypesWithoutFallback(node, out) {
    if (Array.isArray(node)) { node.forEach(function (x) { jsonTypesWithoutFallback(x, out); }); return out; }
    if (node && typeof node === 'object') {
      if (typeof node.type === 'string' && node.fallback === undefined) out.add(node.type);
      Object.keys(node).forEach(function (k) { if (k !== 'fallback') jsonTypesWithoutFallback(node[k], out); });
    }
    return out;
  }
  var host = document.getElementById('host');
  var results = [];
  cases.forEach(function (cs) {
    var problems = [];
    var where = cs.theme + ' ' + cs.width + 'px: ';
    var page = pages[cs.theme];
    document.body.style.background = page.background;
    host.innerHTML = '';
    host.style.width = cs.width + 'px';
    var card = new AC.AdaptiveCard();
    card.hostConfig = new AC.HostConfig(hostConfigs[cs.theme]);
    var ctx = new AC.SerializationContext();
    card.parse(cardJson, ctx);
    var noFallback = jsonTypesWithoutFallback(cardJson, new Set());
    for (var i = 0; i < ctx.eventCount; i++) {
      var ev = ctx.getEventAt(i);
      var name = AC.ValidationEvent[ev.event];
      if (/^Unknown(Element|Action)Type$|NotAllowed$/.test(name)) {
        var dropped = Array.from(noFallback).filter(function (t) { return ev.message.indexOf(t) >= 0; });
        if (dropped.length > 0) problems.push(where + 'dropped without fallback: ' + ev.message);
      } else {
        problems.push(where + 'parse: ' + name + ': ' + ev.message);
      }
    }
    var validation = card.validateProperties();
    validation.validationEvents.forEach(function (e) { problems.push(where + 'invalid: ' + AC.ValidationEvent[e.event] + ': ' + e.message); });
    var el = card.render();
    if (!el) { problems.push(where + 'renderer drew nothing'); results.push(problems); return; }
    host.appendChild(el);
    if (el.scrollWidth > el.clientWidth + 1) problems.push(where + 'card is ' + el.scrollWidth + 'px wide in a ' + el.clientWidth + 'px column');
    // Buttons: Teams lays a card's actions out in one row (host config actionsOrientation "horizontal"); one that
    // runs past the card or whose title the row squeezes into an ellipsis is a button people cannot read or reach.
    var cardBox = el.getBoundingClientRect();
    el.querySelectorAll('button').forEach(function (b) {
      var box = b.getBoundingClientRect();
      var label = (b.textContent || '').trim();
      if (box.right > cardBox.right + 1 || box.left < cardBox.left - 1) problems.push(where + 'button past the edge of the card: "' + label + '"');
      else {
        var t = b.querySelector('div') || b;
        if (t.scrollWidth > t.clientWidth + 1 || b.scrollWidth > b.clientWidth + 1) problems.push(where + 'button title cut off: "' + label + '"');
      }
    });
    var pageBg = parseColor(getComputedStyle(document.body).backgroundColor);
    var walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    var seen = new Set();
    for (var node = walker.nextNode(); node; node = walker.nextNode()) {
      var text = node.nodeValue;
      var parent = node.parentElement;
      if (!text.trim() || !parent || parent.closest('button, input, select, textarea')) continue;
      var m;
      MONEY.lastIndex = 0;
      while ((m = MONEY.exec(text))) {
        var r = document.createRange();
        r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
        if (lines(r) > 1) problems.push(where + 'amount broken across lines: "' + m[0] + '"');
        else if (clipped(r, parent)) problems.push(where + 'amount cut off: "' + m[0] + '"');
      }
      var wre = /\S+/g, w;
      while ((w = wre.exec(text))) {
        var wr = document.createRange();
        wr.setStart(node, w.index); wr.setEnd(node, w.index + w[0].length);
        if (lines(wr) > 1) problems.push(where + 'word broken across lines: "' + w[0] + '"');
        else if (clipped(wr, parent)) problems.push(where + 'text cut off: "' + w[0] + '"');
      }
      if (seen.has(parent)) continue;
      seen.add(parent);
      var cs2 = getComputedStyle(parent);
      var fgc = parseColor(cs2.color);
      if (!fgc) continue;
      var bg = background(parent, pageBg);
      var contrast = ratio(over(fgc, bg), bg);
      var size = parseFloat(cs2.fontSize);
      var bold = Number(cs2.fontWeight) >= 700 || cs2.fontWeight === 'bold';
      var large = size >= 24 || (bold && size >= 18.66);
      var need = large ? 3 : 4.5;
      if (contrast < need) problems.push(where + 'contrast ' + contrast.toFixed(2) + ':1 (needs ' + need + ') for ' + cs2.color + ' text "' + text.trim().slice(0, 40) + '"');
    }
    results.push(problems);
  });
  host.innerHTML = '';
  return results;
};
// The card's text as laid out in one case: what a reader of that host sees, line breaks included.
window.cardText = function (cardJson, cs, hostConfigs) {
  var AC = window.AdaptiveCards;
  var host = document.getElementById('host');
  host.innerHTML = '';
  host.style.width = cs.width + 'px';
  var card = new AC.AdaptiveCard();
  card.hostConfig = new AC.HostConfig(hostConfigs[cs.theme]);
  card.parse(cardJson, new AC.SerializationContext());
  var el = card.render();
  if (!el) return '';
  host.appendChild(el);
  var text = el.innerText;
  host.innerHTML = '';
  return text;
};
`;

export interface CardRenderer {
  /** Every problem found in this card across the cases, e.g. "light 320px: amount broken across lines: "$12,345.00"". */
  problems(card: unknown, cases: RenderCase[]): Promise<string[]>;
  /** The card's text as the renderer lays it out in one case. */
  text(card: unknown, renderCase: RenderCase): Promise<string>;
  close(): Promise<void>;
}

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Debian's Chromium headless (CHROMIUM_PATH elsewhere), quiet: no first-run, sync or background requests. */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
}

/** One browser and one page for a whole test file: the renderer is loaded once, cards are drawn one after another. */
async function openCardRenderer(): Promise<CardRenderer> {
  const browser = await launchChromium();
  const page: Page = await browser.newPage({ viewport: { width: 800, height: 600 } });
  await page.setContent(
    '<!doctype html><html><head><meta charset="utf-8"><style>body{margin:0}</style></head><body><div id="host"></div></body></html>',
  );
  await page.addScriptTag({ path: require.resolve('adaptivecards/dist/adaptivecards.min.js') });
  await page.addScriptTag({ content: TEAMS_MARKDOWN_SCRIPT });
  await page.addScriptTag({ content: CHECK_SCRIPT });
  const hostConfigs = { light: teamsHostConfig('light'), dark: teamsHostConfig('dark'), highContrast: teamsHostConfig('highContrast') };
  return {
    async problems(card, cases) {
      const results = await page.evaluate(
        ([c, cs, hc, pages]) => (window as unknown as { checkCard: (...a: unknown[]) => string[][] }).checkCard(c, cs, hc, pages),
        [card, cases, hostConfigs, THEME_PAGE] as const,
      );
      return [...new Set(results.flat())];
    },
    async text(card, renderCase) {
      return page.evaluate(([c, cs, hc]) => (window as unknown as { cardText: (...a: unknown[]) => string }).cardText(c, cs, hc), [
        card,
        renderCase,
        hostConfigs,
      ] as const);
    },
    async close() {
      await browser.close();
    },
  };
}

/** One renderer for a test file: opened before its tests, closed after them; its methods are usable inside tests. */
export function sharedCardRenderer(): CardRenderer {
  let renderer: CardRenderer | undefined;
  beforeAll(async () => {
    renderer = await openCardRenderer();
  }, 60_000);
  afterAll(async () => {
    await renderer?.close();
  });
  const open = (): CardRenderer => {
    if (!renderer) throw new Error('the card renderer is used outside a test');
    return renderer;
  };
  return {
    problems: (card, cases) => open().problems(card, cases),
    text: (card, renderCase) => open().text(card, renderCase),
    close: () => open().close(),
  };
}
