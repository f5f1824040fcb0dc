// Draws the Teams app icons (manifest/color.png 192x192, manifest/outline.png 32x32) from one bridge glyph.
// Run once after changing the glyph: `npx tsx tools/icons.ts`; the PNGs are committed.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PNG } from 'pngjs';

/** The accent colour of the app (also the manifest's accentColor). */
export const ACCENT = '#0F6E63';

type Rgb = [number, number, number];

function hex(color: string): Rgb {
  if (!/^#[0-9a-f]{6}$/i.test(color)) throw new Error(`not a #rrggbb colour: ${color}`);
  const n = parseInt(color.slice(1), 16);
  return [n >> 16, (n >> 8) & 255, n & 255];
}

// The glyph lives in a unit square (y grows downwards): an arch bridge over a deck, three hangers, two piers.
const ARCH_TOP = 0.14;
const ARCH_FOOT = 0.62;
const ARCH_LEFT = 0.06;
const ARCH_RIGHT = 0.94;
const ARCH_STROKE = 0.1;
const DECK = { top: 0.56, bottom: 0.7 };
const HANGER_STROKE = 0.07;
const HANGERS = [0.3, 0.5, 0.7];
const PIERS = [
  { left: 0.14, right: 0.28 },
  { left: 0.72, right: 0.86 },
];
const PIER_BOTTOM = 0.96;

const K = (ARCH_FOOT - ARCH_TOP) / ((0.5 - ARCH_LEFT) * (0.5 - ARCH_LEFT));
const archY = (x: number): number => ARCH_TOP + K * (x - 0.5) * (x - 0.5);

/** True when the point (unit square) is inside the glyph. */
export function insideGlyph(x: number, y: number): boolean {
  if (x < 0 || x > 1 || y < 0 || y > 1) return false;
  // Deck across the whole width.
  if (y >= DECK.top && y <= DECK.bottom) return true;
  // Arch: a parabola stroke, distance measured along the normal.
  if (x >= ARCH_LEFT && x <= ARCH_RIGHT) {
    const slope = 2 * K * (x - 0.5);
    const d = Math.abs(y - archY(x)) / Math.sqrt(1 + slope * slope);
    if (d <= ARCH_STROKE / 2 && y <= DECK.bottom) return true;
  }
  // Hangers from the arch down to the deck.
  for (const hx of HANGERS) {
    if (Math.abs(x - hx) <= HANGER_STROKE / 2 && y >= archY(hx) && y <= DECK.top) return true;
  }
  // Piers under the deck.
  for (const p of PIERS) {
    if (x >= p.left && x <= p.right && y >= DECK.bottom && y <= PIER_BOTTOM) return true;
  }
  return false;
}

/** Glyph coverage (0..1) of one pixel of a size x size box placed at (ox, oy) with the given extent. */
function coverage(px: number, py: number, box: { x: number; y: number; size: number }, samples = 8): number {
  let hits = 0;
  for (let sy = 0; sy < samples; sy++) {
    for (let sx = 0; sx < samples; sx++) {
      const x = (px + (sx + 0.5) / samples - box.x) / box.size;
      const y = (py + (sy + 0.5) / samples - box.y) / box.size;
      if (insideGlyph(x, y)) hits++;
    }
  }
  return hits / (samples * samples);
}

/** 32x32 outline icon: pure white glyph on a fully transparent background, no padding. */
export function drawOutline(size = 32): PNG {
  const png = new PNG({ width: size, height: size });
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const i = (y * size + x) * 4;
      const a = Math.round(coverage(x, y, { x: 0, y: 0, size }) * 255);
      png.data[i] = 255;
      png.data[i + 1] = 255;
      png.data[i + 2] = 255;
      png.data[i + 3] = a;
    }
  }
  return png;
}

/** 192x192 colour icon: white glyph on a solid accent square (Teams rounds the corners itself). */
export function drawColor(size = 192, accent = ACCENT): PNG {
  const png = new PNG({ width: size, height: size });
  const bg = hex(accent);
  const glyph = { x: size * 0.18, y: size * 0.16, size: size * 0.64 };
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const i = (y * size + x) * 4;
      const c = coverage(x, y, glyph);
      bg.forEach((v, ch) => (png.data[i + ch] = Math.round(v * (1 - c) + 255 * c)));
      png.data[i + 3] = 255;
    }
  }
  return png;
}

export function writeIcons(dir: string): void {
  writeFileSync(`${dir}/color.png`, PNG.sync.write(drawColor()));
  writeFileSync(`${dir}/outline.png`, PNG.sync.write(drawOutline()));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dir = fileURLToPath(new URL('../manifest', import.meta.url));
  writeIcons(dir);
  console.log(`wrote ${dir}/color.png (192x192) and ${dir}/outline.png (32x32)`);
}
