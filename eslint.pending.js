// Files that do not yet pass the strict type-checked rules (415 errors in 77 files when this list was made; 74 files now), so
// `npm run lint` can hold every other file to them now. Issue #23: fix a file, delete its line, never add one.
// `npx eslint --no-ignore <file>` shows what is left in a file.
export const pendingStrictLint = [
  'test/unit/manifest.test.ts', // 14
  'test/unit/mirror-records.test.ts', // 3
];
