// The configuration is documented where people look: every variable is in .env.example and the README table.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configVariables, loadConfig } from '../../src/config.js';
import { commandCatalogue } from '../../src/features/index.js';
import { parseEnv } from 'node:util';

describe('configuration documentation', () => {
  const example = readFileSync('.env.example', 'utf8');
  const readme = readFileSync('README.md', 'utf8');

  it.each([...configVariables()])('%s is in .env.example with a comment and in the README table', (name) => {
    const lines = example.split('\n');
    const i = lines.findIndex((l) => l.startsWith(`${name}=`));
    expect(i, `${name} missing from .env.example`).toBeGreaterThan(0);
    // A comment directly above it, or above the group of variables it belongs to.
    let j = i - 1;
    while (j >= 0 && /^[A-Za-z_]+=/.test(lines[j]!)) j--;
    expect(lines[j]?.startsWith('#'), `${name} has no comment above it`).toBe(true);
    expect(readme).toMatch(new RegExp('\\|\\s*`' + name + '`\\s*\\|'));
  });

  it.each(
    commandCatalogue()
      .list()
      .map((c) => c.name),
  )('the README commands table has a row for %s', (name) => {
    const row = readme.split('\n').find((l) => l.startsWith('| `' + name + '`') || l.startsWith('| `' + name + ' '));
    expect(row, `no README row for ${name}`).toBeDefined();
  });

  it('.env.example as it stands is a valid configuration (local mode)', () => {
    const config = loadConfig(parseEnv(example));
    expect(config.bill.credentials).toBeUndefined();
    expect(config.http.port).toBe(3978);
  });
});
