// A team's install record changed from two places at once (a rename event, the Graph read after install, the bot
// being removed): each change is made to the record as the other left it, and a removal is not undone.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ManualClock } from '../../src/infra/clock.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { NS } from '../../src/infra/state/types.js';
import { OrgBindings, type BindingTarget } from '../../src/bindings/bindings.js';
import { Installations } from '../../src/bindings/installations.js';
import { accessPolicy } from '../../src/features/access.js';
import type { TeamInfo } from '../../src/graph/teams.js';

const clock = new ManualClock(Date.UTC(2026, 10, 21, 9, 0));
const TEAM: BindingTarget = { tenantId: 'aaaaaaaa-0000-4000-8000-000000000001', kind: 'team', targetId: '19:finance@thread.tacv2' };
const GRAPH: TeamInfo = { displayName: 'Finance', description: null, isArchived: false, tenantId: TEAM.tenantId, fetchedAt: clock.now() };
let dir: string;
let store: SqliteStateStore;

function installs(state = store): Installations {
  const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', STATE_DIR: dir });
  return new Installations(state, new OrgBindings({ config, access: accessPolicy(config), state, clock, defaultOrgId: undefined }), clock);
}

/** The store, with some of its methods replaced (the others run on the store itself). */
function over(methods: Partial<SqliteStateStore>): SqliteStateStore {
  return new Proxy(store, {
    get(target, name, receiver) {
      if (name in methods) return methods[name as keyof SqliteStateStore];
      const value: unknown = Reflect.get(target, name, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

async function install(): Promise<void> {
  await installs().recordInstall({
    ...TEAM,
    conversationType: 'channel',
    aadGroupId: 'bbbbbbbb-0000-4000-8000-000000000002',
    name: 'Finance team',
    channelId: TEAM.targetId,
    reference: { conversation: { id: TEAM.targetId } },
    installedBy: undefined,
  });
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'billbridge-installs-'));
  store = new SqliteStateStore(dir, clock);
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('install records changed at once', () => {
  it('a rename and the Graph read after install, on two instances at once, both land', async () => {
    await install();
    await Promise.all([installs().update(TEAM, { name: 'Finance & Ops' }), installs().update(TEAM, { graph: GRAPH })]);
    expect(await installs().get(TEAM)).toMatchObject({ name: 'Finance & Ops', graph: GRAPH });
    expect(await store.entries(NS.editLocks)).toEqual([]);
  });

  it('the bot removed while a Graph read was being recorded stays removed', async () => {
    await install();
    // The removal runs on a second instance right after this one read the record, and is let go once it touched the store.
    let touched!: () => void;
    const reached = new Promise<void>((resolve) => (touched = resolve));
    const after = <T>(p: Promise<T>) => p.finally(() => touched());
    const thereStore = over({
      setIfAbsent: (...a: Parameters<SqliteStateStore['setIfAbsent']>) => after(store.setIfAbsent(...a)),
      delete: (...a: Parameters<SqliteStateStore['delete']>) => after(store.delete(...a)),
    });
    let removal: Promise<{ record: boolean }> | undefined;
    const hereStore = over({
      get: async <T>(ns: string, key: string) => {
        const value = await store.get<T>(ns, key);
        if (ns === NS.conversations && !removal) {
          removal = installs(thereStore).remove(TEAM);
          await reached;
        }
        return value;
      },
    });
    await installs(hereStore).update(TEAM, { graph: GRAPH });
    expect((await removal)?.record).toBe(true);
    expect(await installs().get(TEAM)).toBeUndefined();
  });
});
