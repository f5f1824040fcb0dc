// `npm run package`: builds build/billbridge.zip (the Teams app package) from manifest/ and the config, validated offline.
import { errorMessage } from '../src/errors.js';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, readEnv } from '../src/config.js';
import { commandCatalogue } from '../src/features/index.js';
import {
  buildManifest,
  buildPackage,
  checkIcons,
  commandLists,
  ManifestError,
  manifestVars,
  packageSettings,
  validateManifest,
} from './manifest.js';

const USAGE = `Usage: npm run package -- [--template manifest] [--out build/billbridge.zip] [--dotenv .env]

Builds the Teams app package from the manifest template, the icons next to it and the configuration
(MicrosoftAppId, PUBLIC_HOSTNAME, TEAMS_APP_* and the version in package.json), validates it against the
official schema bundled with @microsoft/app-manifest (no network), and writes the zip.`;

export interface PackageResult {
  out: string;
  bytes: number;
  manifest: Record<string, unknown>;
  warnings: string[];
}

export async function packageApp(opts: { template: string; out: string; envFile: string }): Promise<PackageResult> {
  // Only the app id, the public host and the developer pages: not the app password, tenant lists or BILL credentials.
  const { vars, warnings } = manifestVars(packageSettings(readEnv(opts.envFile)));
  let template: unknown;
  const templateFile = join(opts.template, 'manifest.json');
  try {
    template = JSON.parse(await readFile(templateFile, 'utf8'));
  } catch (err) {
    throw new ManifestError([`${templateFile}: ${errorMessage(err)}`]);
  }
  const manifest = buildManifest(template, vars, commandCatalogue());
  const schemaProblems = await validateManifest(manifest);
  if (schemaProblems.length > 0) {
    throw new ManifestError([
      `manifest.json does not match the Teams ${String(manifest.manifestVersion)} schema:`,
      ...schemaProblems.map((p) => `  ${p}`),
    ]);
  }
  const icons = manifest.icons as { color: string; outline: string };
  const readIcon = async (name: string): Promise<Buffer> => {
    try {
      return await readFile(join(opts.template, name));
    } catch {
      throw new ManifestError([`icon ${name} not found next to ${templateFile}`]);
    }
  };
  const color = await readIcon(icons.color);
  const outline = await readIcon(icons.outline);
  const iconProblems = checkIcons(color, outline);
  if (iconProblems.length > 0) throw new ManifestError(iconProblems);
  const zip = await buildPackage(manifest, { color, outline });
  await mkdir(dirname(opts.out), { recursive: true });
  await writeFile(opts.out, zip);
  return { out: opts.out, bytes: zip.length, manifest, warnings };
}

async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs({
      options: {
        template: { type: 'string', default: 'manifest' },
        out: { type: 'string', default: 'build/billbridge.zip' },
        dotenv: { type: 'string', default: '.env' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (err) {
    console.error(`${errorMessage(err)}\n\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  try {
    const result = await packageApp({ template: resolve(args.template), out: resolve(args.out), envFile: args.dotenv });
    for (const w of result.warnings) console.warn(`warning: ${w}`);
    const bot = (result.manifest.bots as Array<{ botId: string }>)[0];
    const lists = commandLists(commandCatalogue())
      .map((l) => `${l.scopes.join(',')}: ${l.commands.length}`)
      .join(', ');
    console.log(`wrote ${result.out} (${result.bytes} bytes)`);
    console.log(`  app id ${bot?.botId}, version ${String(result.manifest.version)}, manifest ${String(result.manifest.manifestVersion)}`);
    console.log(`  commands per scope: ${lists}`);
    const extension = (result.manifest.composeExtensions as Array<{ commands: Array<{ id: string }> }> | undefined)?.[0];
    console.log(`  message extension commands: ${extension?.commands.map((c) => c.id).join(', ') ?? 'none'}`);
    console.log('  valid against the bundled Teams schema; upload it in Teams > Apps > Manage your apps > Upload an app');
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      return 2;
    }
    if (err instanceof ManifestError) {
      console.error(`The Teams app package was not built:\n${err.problems.map((p) => (p.startsWith('  ') ? p : `  - ${p}`)).join('\n')}`);
      return 1;
    }
    console.error(`The Teams app package was not built: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return 1;
  }
}

process.exitCode = await main();
