// The Teams app package, pure parts: template + config + command registry -> manifest, schema check, icon check, zip.
import { errorMessage } from '../src/errors.js';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import JSZip from 'jszip';
import { PNG } from 'pngjs';
import { AppManifestUtils } from '@microsoft/app-manifest';
import { loadConfig, type Config } from '../src/config.js';
import type { CommandRegistry } from '../src/features/registry.js';
import type { CommandInfo, ConversationKind } from '../src/features/types.js';
import { SEARCH_COMMANDS } from '../src/features/search/commands.js';
import { ACCENT } from './icons.js';

/** Teams allows at most 10 commands per command list (schema: bots[].commandLists[].commands maxItems). */
export const MAX_COMMANDS_PER_LIST = 10;

export type TeamsScope = 'team' | 'groupChat' | 'personal';

/** Manifest bot scope -> the registry's conversation kind. */
export const SCOPE_KINDS: Record<TeamsScope, ConversationKind> = { team: 'channel', groupChat: 'groupChat', personal: 'personal' };

export interface ManifestCommand {
  title: string;
  description: string;
}

export interface CommandList {
  scopes: TeamsScope[];
  commands: ManifestCommand[];
}

/** A message-extension command as the manifest declares it (composeExtensions[].commands[]). */
export interface ExtensionCommand {
  id: string;
  type: 'query' | 'action';
  title: string;
  description: string;
  context: Array<'compose' | 'commandBox' | 'message'>;
  initialRun?: boolean;
  fetchTask?: boolean;
  parameters?: Array<{ name: string; title: string; description: string; inputType: 'text' }>;
}

/** "Look up in BILL" on a message's menu: Teams asks the bot for its dialog (composeExtension/fetchTask). */
export const LOOK_UP_ACTION: ExtensionCommand = {
  id: 'lookUp',
  type: 'action',
  title: 'Look up in BILL',
  description: 'Find the bills, invoices, vendors and customers this message names',
  context: ['message'],
  fetchTask: true,
};

/**
 * The bot's message extension: a search per kind in the compose box and the command box (src/features/search, each run
 * once with nothing typed so something useful shows first), and the message action.
 */
export function composeExtensions(botId: string): Array<{ botId: string; commands: ExtensionCommand[] }> {
  const searches = SEARCH_COMMANDS.map((c): ExtensionCommand => ({
    id: c.id,
    type: 'query',
    title: c.title,
    description: c.description,
    context: ['compose', 'commandBox'],
    initialRun: true,
    parameters: [{ name: 'query', title: c.parameter.title, description: c.parameter.description, inputType: 'text' }],
  }));
  return [{ botId, commands: [...searches, LOOK_UP_ACTION] }];
}

/** Values substituted for `${name}` in the template. */
export interface ManifestVars {
  MicrosoftAppId: string;
  version: string;
  PUBLIC_HOSTNAME: string;
  developerName: string;
  websiteUrl: string;
  privacyUrl: string;
  termsOfUseUrl: string;
  accentColor: string;
}

export class ManifestError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ManifestError';
  }
}

const GUID = /^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$/;

/** One command list per scope, in registry rank order, at most 10 each; a scope without commands gets no list. */
export function commandLists(registry: CommandRegistry<CommandInfo>): CommandList[] {
  const lists: CommandList[] = [];
  for (const scope of Object.keys(SCOPE_KINDS) as TeamsScope[]) {
    const commands = registry
      .forScope(SCOPE_KINDS[scope])
      .slice(0, MAX_COMMANDS_PER_LIST)
      .map((c) => ({ title: c.name, description: c.description }));
    if (commands.length > 0) lists.push({ scopes: [scope], commands });
  }
  return lists;
}

/** What the package is built from: the bot's app id, its public host, the package version and the developer pages. */
export type PackageSettings = Pick<Config, 'version' | 'publicHostname' | 'teamsApp'> & { bot: Pick<Config['bot'], 'appId'> };

/** The variables a package reads; nothing else of the environment is looked at. */
const PACKAGE_VARIABLES = [
  'PUBLIC_HOSTNAME',
  'TEAMS_APP_DEVELOPER_NAME',
  'TEAMS_APP_WEBSITE_URL',
  'TEAMS_APP_PRIVACY_URL',
  'TEAMS_APP_TERMS_URL',
];

/**
 * The package's settings from the environment: the app id, PUBLIC_HOSTNAME and TEAMS_APP_*, checked as the bot's
 * config checks them. The app password, the tenant and admin lists and BILL's credentials are only the running bot's:
 * a package is built without them (and without reading them), e.g. by someone who may not see the secrets.
 */
export function packageSettings(env: Record<string, string | undefined>): PackageSettings {
  const config = loadConfig(Object.fromEntries(PACKAGE_VARIABLES.flatMap((k) => (env[k] === undefined ? [] : [[k, env[k]]]))));
  return {
    version: config.version,
    publicHostname: config.publicHostname,
    teamsApp: config.teamsApp,
    bot: { appId: (env.MicrosoftAppId ?? '').trim() },
  };
}

/**
 * The substitution values from config. Developer URLs default to the bot's public host (Teams shows them on
 * the app's details page; a line-of-business app usually points them at an intranet page).
 */
export function manifestVars(config: PackageSettings): { vars: ManifestVars; warnings: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
  const appId = config.bot.appId;
  if (appId === '') problems.push("MicrosoftAppId is empty: the package needs the Azure Bot's application (client) id");
  else if (!GUID.test(appId)) problems.push('MicrosoftAppId must be a GUID');
  if (!/^\d+\.\d+\.\d+$/.test(config.version))
    problems.push(`version "${config.version}" (package.json) must be MAJOR.MINOR.PATCH for Teams`);
  // validDomains lists host names; a port is not part of a domain.
  const host = config.publicHostname.replace(/:\d+$/, '');
  if (host === '') problems.push('PUBLIC_HOSTNAME is empty: set the public host name the bot is reached at (validDomains)');
  if (problems.length > 0) throw new ManifestError(problems);
  const app = config.teamsApp;
  const websiteUrl = app.websiteUrl || `https://${host}/`;
  if (!app.websiteUrl) warnings.push(`TEAMS_APP_WEBSITE_URL is not set: using ${websiteUrl}`);
  if (!app.privacyUrl) warnings.push(`TEAMS_APP_PRIVACY_URL is not set: using ${websiteUrl}`);
  if (!app.termsOfUseUrl) warnings.push(`TEAMS_APP_TERMS_URL is not set: using ${websiteUrl}`);
  return {
    vars: {
      MicrosoftAppId: appId,
      version: config.version,
      PUBLIC_HOSTNAME: host,
      developerName: app.developerName,
      websiteUrl,
      privacyUrl: app.privacyUrl || websiteUrl,
      termsOfUseUrl: app.termsOfUseUrl || websiteUrl,
      accentColor: ACCENT,
    },
    warnings,
  };
}

/**
 * Substitutes `${name}` in every string of the template and puts the registry's command lists where the template says
 * `"${commandLists}"`, and the message extension where it says `"${composeExtensions}"`. Unknown placeholders are
 * errors, so a typo never ships.
 */
export function buildManifest(template: unknown, vars: ManifestVars, registry: CommandRegistry<CommandInfo>): Record<string, unknown> {
  const problems: string[] = [];
  const values = vars as unknown as Record<string, string>;
  const walk = (node: unknown, path: string): unknown => {
    if (typeof node === 'string') {
      if (node === '${commandLists}') return commandLists(registry);
      if (node === '${composeExtensions}') return composeExtensions(vars.MicrosoftAppId);
      return node.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string) => {
        const v = values[name];
        if (v === undefined) {
          problems.push(`${path || '/'}: unknown placeholder ${whole}`);
          return whole;
        }
        return v;
      });
    }
    if (Array.isArray(node)) return node.map((v, i) => walk(v, `${path}/${i}`));
    if (node !== null && typeof node === 'object') {
      return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, `${path}/${k}`)]));
    }
    return node;
  };
  if (template === null || typeof template !== 'object' || Array.isArray(template))
    throw new ManifestError(['manifest.json must be a JSON object']);
  const manifest = walk(template, '') as Record<string, unknown>;
  if (problems.length > 0) throw new ManifestError(problems);
  return manifest;
}

/** The official Teams schema for the manifest's version, as bundled by @microsoft/app-manifest (never fetched). */
export async function bundledSchema(manifestVersion: string): Promise<Record<string, unknown>> {
  if (!/^(\d+\.\d+|devPreview)$/.test(manifestVersion))
    throw new ManifestError([`manifestVersion "${manifestVersion}" is not a Teams schema version`]);
  const require = createRequire(import.meta.url);
  const root = dirname(require.resolve('@microsoft/app-manifest/package.json'));
  const dir = manifestVersion === 'devPreview' ? 'vDevPreview' : `v${manifestVersion}`;
  const file = join(root, 'build', 'json-schemas', 'teams', dir, 'MicrosoftTeams.schema.json');
  let raw: string;
  try {
    raw = await readFile(file, 'utf8');
  } catch {
    throw new ManifestError([`@microsoft/app-manifest bundles no schema for manifestVersion ${manifestVersion}`]);
  }
  // The same clean-up the library applies to its schemas (JSON has no \a or \v escapes).
  return JSON.parse(raw.replace(/\\a/g, '\\u0007').replace(/\\v/g, '\\u000b')) as Record<string, unknown>;
}

/** Schema messages ("/bots/0/commandLists/0/commands must NOT have more than 10 items..."); empty when valid. */
export async function validateManifest(manifest: Record<string, unknown>): Promise<string[]> {
  const version = typeof manifest.manifestVersion === 'string' ? manifest.manifestVersion : '';
  const schema = await bundledSchema(version);
  const errors = await AppManifestUtils.validateAgainstSchema(manifest as never, schema as never);
  const problems = [...errors];
  // Rules Teams enforces on upload that the schema cannot express.
  const bots = Array.isArray(manifest.bots) ? (manifest.bots as Array<Record<string, unknown>>) : [];
  const web = manifest.webApplicationInfo as { id?: unknown } | undefined;
  if (web && bots[0] && web.id !== bots[0].botId)
    problems.push('/webApplicationInfo/id must equal /bots/0/botId (the Entra app of the bot)');
  return problems;
}

export interface IconCheck {
  width: number;
  height: number;
  problems: string[];
}

/** Teams' icon rules: color 192x192; outline 32x32, white (255,255,255) on transparent. */
export function checkIcons(color: Buffer, outline: Buffer): string[] {
  const problems: string[] = [];
  const read = (name: string, buf: Buffer): PNG | undefined => {
    try {
      return PNG.sync.read(buf);
    } catch (err) {
      problems.push(`${name} is not a PNG (${errorMessage(err)})`);
      return undefined;
    }
  };
  const c = read('color.png', color);
  if (c && (c.width !== 192 || c.height !== 192)) problems.push(`color.png must be 192x192, is ${c.width}x${c.height}`);
  const o = read('outline.png', outline);
  if (o) {
    if (o.width !== 32 || o.height !== 32) problems.push(`outline.png must be 32x32, is ${o.width}x${o.height}`);
    const s = outlineStats(o);
    if (s.coloured > 0) problems.push(`outline.png must be white on transparent: ${s.coloured} visible pixels are not white`);
    if (s.visible === 0) problems.push('outline.png is fully transparent');
    if (s.transparent === 0) problems.push('outline.png has no transparent background');
  }
  return problems;
}

/** Pixel counts of an outline icon: fully transparent, visible, and visible-but-not-white. */
export function outlineStats(png: PNG): { transparent: number; visible: number; coloured: number } {
  let transparent = 0;
  let visible = 0;
  let coloured = 0;
  for (let i = 0; i < png.data.length; i += 4) {
    const a = png.data.readUInt8(i + 3);
    if (a === 0) {
      transparent++;
      continue;
    }
    visible++;
    if (png.data[i] !== 255 || png.data[i + 1] !== 255 || png.data[i + 2] !== 255) coloured++;
  }
  return { transparent, visible, coloured };
}

/** The zip Teams takes: manifest.json and the two icons at the archive root, under the names the manifest uses. */
export async function buildPackage(manifest: Record<string, unknown>, icons: { color: Buffer; outline: Buffer }): Promise<Buffer> {
  const names = (manifest.icons ?? {}) as { color?: string; outline?: string };
  const zip = new JSZip();
  // Fixed dates keep the archive byte-identical for the same inputs.
  const date = new Date('2020-01-01T00:00:00Z');
  zip.file('manifest.json', JSON.stringify(manifest, null, 2) + '\n', { date });
  zip.file(names.color ?? 'color.png', icons.color, { date });
  zip.file(names.outline ?? 'outline.png', icons.outline, { date });
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE', compressionOptions: { level: 9 } });
}
