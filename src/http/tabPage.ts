// The BILL dashboard tab's static page: GET /tab (and /tab?config=1, the configuration page of a channel or meeting tab),
// its script and style, and Microsoft's TeamsJS (each to HEAD too), with headers that let only Teams and Microsoft 365 frame it.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Request, Response, Server } from 'restify';

const require = createRequire(import.meta.url);

/** public/tab/ at the package root: the same folder from src/http (tsx, tests) and dist/http (npm start). */
const pageFile = (name: string): string => fileURLToPath(new URL(`../../public/tab/${name}`, import.meta.url));

/** Hosts that may frame the tab, as Microsoft's "Prerequisites" for Teams tabs list them (*.cloud.microsoft: where all are moving). */
const FRAME_ANCESTORS = [
  'https://teams.microsoft.com',
  'https://*.teams.microsoft.com',
  'https://*.cloud.microsoft',
  'https://*.microsoft365.com',
  'https://*.office.com',
  'https://outlook.office365.com',
];

/**
 * Scripts, styles and requests from this server only, no inline script or style, no plugins or forms. TeamsJS's
 * fetch of Microsoft's current host list is refused too: it then checks hosts against the list it ships with.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  `frame-ancestors ${FRAME_ANCESTORS.join(' ')}`,
].join('; ');

/** The page's own files are revalidated (they change with a deploy); TeamsJS only with a dependency upgrade. */
const FILES = [
  { path: '/tab', file: pageFile('index.html'), type: 'text/html; charset=utf-8', cache: 'no-cache' },
  { path: '/tab/app.js', file: pageFile('app.js'), type: 'text/javascript; charset=utf-8', cache: 'no-cache' },
  { path: '/tab/tab.css', file: pageFile('tab.css'), type: 'text/css; charset=utf-8', cache: 'no-cache' },
  {
    path: '/tab/teams.js',
    file: require.resolve('@microsoft/teams-js/dist/umd/MicrosoftTeams.min.js'),
    type: 'text/javascript; charset=utf-8',
    cache: 'public, max-age=86400',
  },
];

/** Adds the tab page's routes. Files are read per request: the page is opened rarely and TeamsJS is cached a day. */
export function tabPageRoutes(server: Server): void {
  for (const { path, file, type, cache } of FILES) {
    const serve = async (_req: Request, res: Response) => {
      const body = await readFile(file);
      res.setHeader('Content-Type', type);
      res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Referrer-Policy', 'no-referrer');
      res.setHeader('Cache-Control', cache);
      res.sendRaw(200, body);
    };
    // HEAD (link checkers, proxies) gets GET's status and headers; Node leaves out the body.
    server.get(path, serve);
    server.head(path, serve);
  }
}
