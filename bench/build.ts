// Compiles the bench's child processes (and the src/ they import) to plain JavaScript under build/bench/, so the bot
// runs as `npm start` runs it — compiled, without a TypeScript loader in the process (which would add its own
// worker thread, CPU and tens of MB to what is measured).
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BUILD_DIR = join(ROOT, 'build', 'bench');

export async function buildChildren(): Promise<void> {
  mkdirSync(BUILD_DIR, { recursive: true });
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version?: string };
  // ESM like the repository (the compiled files sit outside its package.json's reach otherwise), same version.
  writeFileSync(join(BUILD_DIR, 'package.json'), JSON.stringify({ type: 'module', version: pkg.version ?? '0.0.0', private: true }) + '\n');
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    await promisify(execFile)(process.execPath, [tsc, '-p', join(ROOT, 'bench', 'tsconfig.json')], {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (err) {
    const out = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`compiling the bench children failed:\n${out.stdout ?? ''}${out.stderr ?? ''}`.slice(0, 4000), { cause: err });
  }
}

/** The compiled entry of a child (bench/children/<name>.ts -> build/bench/bench/children/<name>.js). */
export function childEntry(name: 'bot' | 'echo' | 'sandbox'): string {
  return join(BUILD_DIR, 'bench', 'children', `${name}.js`);
}
