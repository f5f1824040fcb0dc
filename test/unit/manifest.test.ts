// The Teams app package: a valid manifest built from the registry, real icons, and a build that refuses bad input.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import JSZip from 'jszip';
import { PNG } from 'pngjs';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { commandCatalogue } from '../../src/features/index.js';
import { CommandRegistry } from '../../src/features/registry.js';
import type { CommandDefinition } from '../../src/features/types.js';
import { adaptiveCard } from '../../src/cards/card.js';
import { SEARCH_COMMANDS } from '../../src/features/search/commands.js';
import {
  buildManifest,
  buildPackage,
  checkIcons,
  commandLists,
  ManifestError,
  manifestVars,
  outlineStats,
  packageSettings,
  SCOPE_KINDS,
  validateManifest,
  type TeamsScope,
} from '../../tools/manifest.js';

const run = promisify(execFile);

const APP_ID = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
const TENANT = 'aaaaaaaa-0000-4000-8000-000000000001';
const ENV = {
  MicrosoftAppId: APP_ID,
  MicrosoftAppPassword: 'test-password-1',
  MicrosoftAppTenantId: TENANT,
  ALLOWED_TENANT_IDS: TENANT,
  PUBLIC_HOSTNAME: 'billbridge.contoso.com',
  TEAMS_APP_PRIVACY_URL: 'https://intranet.contoso.com/privacy',
};

/** What these tests read of a manifest (the bundled schema checks all of it). */
interface Manifest extends Record<string, unknown> {
  manifestVersion: string;
  id: string;
  version: string;
  accentColor: string;
  validDomains: string[];
  developer: { websiteUrl: string; privacyUrl?: string };
  bots: Array<{
    botId: string;
    scopes: string[];
    commandLists: Array<{ scopes: TeamsScope[]; commands: Array<{ title: string; description: string }> }>;
  }>;
  webApplicationInfo: { id: string; resource?: string };
  authorization: { permissions: { resourceSpecific: unknown[] } };
  configurableTabs: unknown[];
  staticTabs: Array<{ entityId: string }>;
  defaultGroupCapability: { meetings?: string };
  composeExtensions: Array<{ botId: string; commands: Array<Record<string, unknown>> }>;
}

const readManifest = (json: string) => JSON.parse(json) as Manifest;
const template = readManifest(readFileSync('manifest/manifest.json', 'utf8'));
const color = readFileSync('manifest/color.png');
const outline = readFileSync('manifest/outline.png');

function build(env: Record<string, string> = ENV, registry = commandCatalogue()): Manifest {
  return buildManifest(template, manifestVars(loadConfig(env)).vars, registry) as Manifest;
}

const temps: string[] = [];
afterAll(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

describe('the manifest built from the template and the config', () => {
  it('validates against the bundled Teams 1.23 schema with zero errors', async () => {
    const manifest = build();
    expect(manifest.manifestVersion).toBe('1.23');
    expect(await validateManifest(manifest)).toEqual([]);
  });

  it('carries the app id, package version, public host and developer pages from the config', () => {
    const manifest = build();
    expect(manifest.id).toBe(APP_ID);
    expect(manifest.bots[0]!.botId).toBe(APP_ID);
    expect(manifest.webApplicationInfo.id).toBe(APP_ID);
    expect(manifest.version).toBe((JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version);
    expect(manifest.validDomains).toEqual(['billbridge.contoso.com']);
    expect(manifest.developer.privacyUrl).toBe('https://intranet.contoso.com/privacy');
    expect(manifest.developer.websiteUrl).toBe('https://billbridge.contoso.com/');
    expect(JSON.stringify(manifest)).not.toContain('${');
  });

  it('asks only for the team-scoped permission it needs to read the team (RSC TeamSettings.Read.Group)', () => {
    expect(build().authorization.permissions.resourceSpecific).toEqual([{ name: 'TeamSettings.Read.Group', type: 'Application' }]);
  });

  it('declares the dashboard tab: configurable for channels, group chats and meetings, static for personal, with Teams single sign-on', async () => {
    const manifest = build();
    expect(manifest.configurableTabs).toEqual([
      {
        configurationUrl: 'https://billbridge.contoso.com/tab?config=1',
        canUpdateConfiguration: false,
        scopes: ['team', 'groupChat'],
        context: ['channelTab', 'privateChatTab', 'meetingChatTab', 'meetingDetailsTab', 'meetingSidePanel'],
      },
    ]);
    // The bot's chat stays the first personal tab; the dashboard comes next.
    expect(manifest.staticTabs.map((t) => t.entityId)).toEqual(['conversations', 'dashboard']);
    expect(manifest.staticTabs[1]).toMatchObject({ contentUrl: 'https://billbridge.contoso.com/tab', scopes: ['personal'] });
    // The app id URI the tab API accepts as audience (src/tab/sso.ts).
    expect(manifest.webApplicationInfo).toEqual({ id: APP_ID, resource: `api://billbridge.contoso.com/${APP_ID}` });
    expect(manifest.defaultGroupCapability.meetings).toBe('tab');
    expect(await validateManifest(manifest)).toEqual([]);
  });

  it('has one command list per scope equal to what the registry offers there, in rank order', () => {
    const registry = commandCatalogue();
    const manifest = build(ENV, registry);
    const lists = manifest.bots[0]!.commandLists;
    expect(lists.map((l) => l.scopes)).toEqual([['team'], ['groupChat'], ['personal']]);
    for (const list of lists) {
      const expected = registry.forScope(SCOPE_KINDS[list.scopes[0]!]).slice(0, 10);
      expect(list.commands).toEqual(expected.map((c) => ({ title: c.name, description: c.description })));
    }
  });

  it('keeps the ten most useful commands when the registry has more, and leaves out channel-only commands in chats', async () => {
    const def = (name: string, rank: number, scopes?: CommandDefinition['scopes']): CommandDefinition => ({
      name,
      usage: name,
      description: `does ${name}`,
      examples: [name],
      upstream: false,
      rank,
      ...(scopes ? { scopes } : {}),
      run: async () => adaptiveCard([], { summary: name }),
    });
    const names = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo', 'lima'];
    const registry = new CommandRegistry().register(...names.map((n, i) => def(n, 12 - i)), def('channel thing', 0, ['channel']));
    const lists = commandLists(registry);
    const team = lists.find((l) => l.scopes[0] === 'team')!;
    expect(team.commands).toHaveLength(10);
    expect(team.commands[0]!.title).toBe('channel thing');
    expect(team.commands.map((c) => c.title).slice(1, 4)).toEqual(['lima', 'kilo', 'juliet']);
    const personal = lists.find((l) => l.scopes[0] === 'personal')!;
    expect(personal.commands.map((c) => c.title)).not.toContain('channel thing');
    const manifest = build(ENV, registry);
    expect(await validateManifest(manifest)).toEqual([]);
  });

  it('declares the message extension: a search per kind in the compose box and command box, and "Look up in BILL" on messages', async () => {
    const manifest = build();
    const extensions = manifest.composeExtensions;
    expect(extensions).toHaveLength(1);
    expect(extensions[0]!.botId).toBe(APP_ID);
    const commands = extensions[0]!.commands;
    expect(commands.map((c) => c.id)).toEqual(['bills', 'invoices', 'vendors', 'customers', 'lookUp']);
    for (const search of commands.filter((c) => c.type === 'query')) {
      expect(search.context).toEqual(['compose', 'commandBox']);
      expect(search.initialRun).toBe(true);
      expect(search.parameters).toEqual([expect.objectContaining({ name: 'query', inputType: 'text' })]);
      expect(SEARCH_COMMANDS.map((c) => c.id)).toContain(search.id);
    }
    expect(commands.at(-1)).toEqual(
      expect.objectContaining({ id: 'lookUp', type: 'action', title: 'Look up in BILL', context: ['message'], fetchTask: true }),
    );
    expect(await validateManifest(manifest)).toEqual([]);
  });

  it('needs only the app id and the public host: no app password, tenant list or BILL credentials', async () => {
    const only = { MicrosoftAppId: APP_ID, PUBLIC_HOSTNAME: 'billbridge.contoso.com' };
    // The running bot refuses this environment (an app id needs a password and a tenant list); a package does not.
    expect(() => loadConfig(only)).toThrow(/MicrosoftAppPassword[\s\S]*ALLOWED_TENANT_IDS/);
    const manifest = buildManifest(template, manifestVars(packageSettings(only)).vars, commandCatalogue());
    expect(await validateManifest(manifest)).toEqual([]);
    // The same manifest as from the bot's whole configuration.
    const { TEAMS_APP_PRIVACY_URL: _privacy, ...withSecrets } = ENV;
    expect(manifest).toEqual(build(withSecrets));
    // Broken runtime-only settings are not the package's business either.
    expect(packageSettings({ ...only, MicrosoftAppType: 'Bogus', REDIS_URL: 'http://nope' }).bot.appId).toBe(APP_ID);
  });

  it('refuses an unknown placeholder instead of shipping it', () => {
    const broken = { ...template, name: { short: '${apName}' } };
    expect(() => buildManifest(broken, manifestVars(loadConfig(ENV)).vars, commandCatalogue())).toThrow(/unknown placeholder \$\{apName\}/);
  });

  it('needs an app id and a public host name', () => {
    const local = loadConfig({});
    try {
      manifestVars(local);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ManifestError);
      expect((err as ManifestError).problems.join('\n')).toMatch(/MicrosoftAppId is empty[\s\S]*PUBLIC_HOSTNAME is empty/);
    }
  });

  it('reports what the schema says about a broken manifest', async () => {
    const manifest = build();
    manifest.accentColor = 'green';
    delete manifest.developer.privacyUrl;
    const problems = await validateManifest(manifest);
    expect(problems.some((p) => p.startsWith('/accentColor'))).toBe(true);
    expect(problems.some((p) => p.includes('privacyUrl'))).toBe(true);
  });
});

describe('the icons', () => {
  it('color.png is a 192x192 PNG with a drawn mark, not a blank square', () => {
    const png = PNG.sync.read(color);
    expect([png.width, png.height]).toEqual([192, 192]);
    const colours = new Set<number>();
    for (let i = 0; i < png.data.length; i += 4) colours.add(png.data.readUInt32BE(i));
    expect(colours.size).toBeGreaterThan(2);
  });

  it('outline.png is 32x32, white on transparent', () => {
    const png = PNG.sync.read(outline);
    expect([png.width, png.height]).toEqual([32, 32]);
    const stats = outlineStats(png);
    expect(stats.coloured).toBe(0);
    expect(stats.transparent).toBeGreaterThan(100);
    expect(stats.visible).toBeGreaterThan(100);
    expect(checkIcons(color, outline)).toEqual([]);
  });

  it('a coloured or wrongly sized outline is refused', () => {
    const bad = new PNG({ width: 48, height: 48 });
    bad.data.fill(0);
    bad.data[3] = 255; // one opaque black pixel
    const problems = checkIcons(color, PNG.sync.write(bad));
    expect(problems).toEqual(expect.arrayContaining([expect.stringMatching(/32x32/), expect.stringMatching(/not white/)]));
  });
});

describe('npm run package', () => {
  const cli = (args: string[], env: Record<string, string>) =>
    run('npx', ['tsx', 'tools/package.ts', '--dotenv', '/nonexistent/.env', ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (err: unknown) => {
        const e = err as { code: number; stdout: string; stderr: string };
        return { code: e.code, stdout: e.stdout, stderr: e.stderr };
      },
    );

  it('writes a zip with manifest.json and both icons at its root', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'billbridge-pkg-'));
    temps.push(dir);
    const out = join(dir, 'billbridge.zip');
    const res = await cli(['--out', out], ENV);
    expect(res.stderr).not.toMatch(/not built/);
    expect(res.code).toBe(0);
    const zip = await JSZip.loadAsync(readFileSync(out));
    expect(Object.keys(zip.files).sort()).toEqual(['color.png', 'manifest.json', 'outline.png']);
    const manifest = readManifest(await zip.file('manifest.json')!.async('string'));
    expect(await validateManifest(manifest)).toEqual([]);
    expect(Buffer.compare(await zip.file('outline.png')!.async('nodebuffer'), outline)).toBe(0);
    // The same inputs give the same bytes.
    expect(Buffer.compare(await buildPackage(manifest, { color, outline }), readFileSync(out))).toBe(0);
  });

  it('builds the package from the app id and host alone, with the message extension in it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'billbridge-pkg-'));
    temps.push(dir);
    const out = join(dir, 'billbridge.zip');
    const res = await cli(['--out', out], { MicrosoftAppId: APP_ID, PUBLIC_HOSTNAME: 'billbridge.contoso.com' });
    expect(res.stderr).not.toMatch(/Password|TENANT/);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('message extension commands: bills, invoices, vendors, customers, lookUp');
    const manifest = readManifest(await (await JSZip.loadAsync(readFileSync(out))).file('manifest.json')!.async('string'));
    expect(await validateManifest(manifest)).toEqual([]);
    expect(manifest.composeExtensions[0]!.botId).toBe(APP_ID);
  });

  it('fails with the schema messages and writes nothing when the manifest is broken', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'billbridge-pkg-'));
    temps.push(dir);
    cpSync('manifest', join(dir, 'manifest'), { recursive: true });
    const broken = { ...template, accentColor: 'teal', bots: [{ ...template.bots[0]!, scopes: ['team', 'everyone'] }] };
    writeFileSync(join(dir, 'manifest', 'manifest.json'), JSON.stringify(broken));
    const out = join(dir, 'out.zip');
    const res = await cli(['--template', join(dir, 'manifest'), '--out', out], ENV);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('does not match the Teams 1.23 schema');
    expect(res.stderr).toMatch(/\/accentColor/);
    expect(res.stderr).toMatch(/\/bots\/0\/scopes\/1/);
    expect(existsSync(out)).toBe(false);
  });

  it('fails naming the variable when the configuration cannot make a package', async () => {
    const res = await cli(['--out', join(tmpdir(), 'never.zip')], { ...ENV, PUBLIC_HOSTNAME: '' });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/PUBLIC_HOSTNAME is empty/);
  });
});
