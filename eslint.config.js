// ESLint: typescript-eslint's strict type-checked rules over src, test and bench; Prettier owns formatting.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { defineConfig } from 'eslint/config';
import prettier from 'eslint-config-prettier';

export default defineConfig(
  { ignores: ['dist/', 'build/', 'coverage/', 'node_modules/', '.data/'] },
  js.configs.recommended,
  tseslint.configs.strictTypeChecked,
  tseslint.configs.stylisticTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // Numbers and booleans read fine in messages and URLs; objects, unknowns and nullish values still fail.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      // A leading underscore marks a parameter or binding kept for its position (callbacks, destructuring rest).
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // `() => server.close()` callbacks and `return send(res, ...)` early exits from void functions are house idioms:
      // both return nothing either way, and braces or a separate `return;` would only add lines.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true, ignoreVoidReturningFunctions: true }],
      // BILL and Teams send '' for absent names and ids; `name || fallback` treats it as absent on purpose.
      '@typescript-eslint/prefer-nullish-coalescing': ['error', { ignorePrimitives: { string: true } }],
      // The code writes `T[]` for simple element types and `Array<{ ... }>` for object and union ones.
      '@typescript-eslint/array-type': ['error', { default: 'array-simple' }],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // Tests index fixtures they have just built; a wrong guess fails the test at once.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Test doubles implement async interfaces as `async () => value`, so a throw in them rejects like the real thing.
      '@typescript-eslint/require-await': 'off',
      // A test that must reach a private part (the SQLite handle, to fill the disk) says so with `store['db']`.
      '@typescript-eslint/dot-notation': ['error', { allowPrivateClassPropertyAccess: true }],
    },
  },
  {
    files: ['src/infra/state/types.ts', 'src/infra/state/sqliteStore.ts', 'src/infra/state/redisStore.ts'],
    rules: {
      // get<T>/entries<T> name the shape a caller stored (JSON in, JSON out); every reader checks what it reads back.
      '@typescript-eslint/no-unnecessary-type-parameters': 'off',
    },
  },
  {
    files: ['**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    files: ['public/tab/app.js'],
    // The dashboard tab's page script runs in the browser, beside TeamsJS's UMD global.
    languageOptions: {
      globals: Object.fromEntries(
        ['window', 'document', 'location', 'fetch', 'URLSearchParams', 'setTimeout'].map((name) => [name, 'readonly']),
      ),
    },
  },
  prettier,
);
