// Single-instance state: one SQLite database, STATE_DIR/billbridge.sqlite, held by one process at a time.
// - Every call is answered once its transaction is committed (calls of one event-loop turn share one); a write that
//   cannot be committed (disk full, I/O error) rejects, with every call that may have seen it. No in-memory copy.
// - WAL with synchronous=FULL: an acknowledged write survives a kill and a power cut; a batch of NOT_SYNCED namespaces
//   only is committed with NORMAL (a power cut may lose its last few). The sync is ~6% of the CPU of a help command.
// - locking_mode=EXCLUSIVE, taken by a write at open with busy_timeout 0: a second process gets SQLITE_BUSY at once;
//   the OS drops the lock when the holder dies (kill -9 included).
// The audit trail is a plain append-only file (STATE_DIR/audit.log, what operators tail and rotate), synced within a second.
import Database from 'better-sqlite3';
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { NamedError } from '../../errors.js';
import type { Clock } from '../clock.js';
import { NS, checkNamespace, encode, type SetOptions, type StateStore } from './types.js';

export const DATABASE_FILE = 'billbridge.sqlite';
/** Who holds the database, for the refusal message only (the lock itself is the database file's). */
const HOLDER_FILE = 'billbridge.pid';
const AUDIT_FILE = 'audit.log';

/** Written on every turn, and harmless to lose in a power cut: Teams' duplicate-delivery marks, card button records. */
const NOT_SYNCED: ReadonlySet<string> = new Set([NS.seenActivities, NS.cardMessages]);

export class StateDirInUse extends NamedError {
  constructor(dir: string, pid: string | undefined) {
    super(
      `STATE_DIR ${dir} is in use by another billbridge process (pid ${pid ?? 'unknown'}); ` +
        'stop that one first, or give this one its own STATE_DIR (several instances share state through REDIS_URL)',
    );
  }
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS entries (
  ns TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  expires_at INTEGER,
  PRIMARY KEY (ns, key)
);
CREATE INDEX IF NOT EXISTS entries_expiry ON entries (expires_at) WHERE expires_at IS NOT NULL;
`;

interface Row {
  ns: string;
  key: string;
  value: string;
  expires: number | null;
}
type Key = Pick<Row, 'ns' | 'key'>;
interface Now {
  now: number;
}

/** A live row: no expiry, or one still ahead of the clock (the store's clock, so tests can move it). */
const LIVE = '(expires_at IS NULL OR expires_at > @now)';

const UPSERT =
  'INSERT INTO entries (ns, key, value, expires_at) VALUES (@ns, @key, @value, @expires) ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at';

function statements(db: Database.Database) {
  return {
    get: db.prepare<Key & Now, { value: string }>(`SELECT value FROM entries WHERE ns = @ns AND key = @key AND ${LIVE}`),
    set: db.prepare<Row>(UPSERT),
    // Inserts, or replaces an entry that has expired; one statement, so one change count says whether it created.
    setIfAbsent: db.prepare<Row & Now>(`${UPSERT} WHERE entries.expires_at IS NOT NULL AND entries.expires_at <= @now`),
    delete: db.prepare<Key, { expires_at: number | null }>('DELETE FROM entries WHERE ns = @ns AND key = @key RETURNING expires_at'),
    // rowid order: insertion order, and a replaced value keeps its place (as a Map would).
    entries: db.prepare<{ ns: string } & Now, { key: string; value: string }>(
      `SELECT key, value FROM entries WHERE ns = @ns AND ${LIVE} ORDER BY rowid`,
    ),
    sweep: db.prepare<Now>('DELETE FROM entries WHERE expires_at IS NOT NULL AND expires_at <= @now'),
  };
}

export class SqliteStateStore implements StateStore {
  readonly kind = 'file' as const;
  /** STATE_DIR, resolved. */
  private readonly dir: string;
  readonly auditLocation: string;
  private readonly db: Database.Database;
  private readonly sql: ReturnType<typeof statements>;
  private readonly audit: LogFile;
  /** The transaction changes are being added to, committed at the next turn of the event loop. */
  private batch: Batch | undefined;
  private readonly sweepTimer: NodeJS.Timeout;
  private closed = false;

  /** Opens (or creates) STATE_DIR/billbridge.sqlite and takes its lock; throws StateDirInUse when another holds it. */
  constructor(
    dir: string,
    private readonly clock: Clock,
  ) {
    this.dir = resolve(dir);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const file = join(this.dir, DATABASE_FILE);
    let db: Database.Database | undefined;
    try {
      // Owner-only, like the directory (without SECRETS_KEY webhook keys are stored as BILL gave them), also when another
      // version or a copy made them readable by others; SQLite gives its WAL the database file's mode.
      closeSync(openSync(file, 'a', 0o600));
      for (const f of [file, `${file}-wal`, join(this.dir, AUDIT_FILE)]) {
        try {
          chmodSync(f, 0o600);
        } catch {
          // Absent (the WAL, the audit log), or owned by another user.
        }
      }
      // timeout 0: a lock held by another process is reported at once instead of being waited for.
      db = new Database(file, { timeout: 0 });
      // EXCLUSIVE before WAL: the WAL index lives in this process's memory (no -shm file) and the lock is held till close.
      db.pragma('locking_mode = EXCLUSIVE');
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      // SQLite's own 2 MB page cache, not better-sqlite3's 16 MB: everything read often is held in memory above this
      // store, so the cache mostly kept pages just written (peak RSS 184 -> 173 MB in the bench's 512 MB-container pass).
      db.pragma('cache_size = -2000');
      db.exec(SCHEMA);
      // A write at open (any will do) takes the exclusive lock now, not at the first change some minutes later.
      db.pragma('user_version = 1');
    } catch (err) {
      db?.close();
      if ((err as { code?: string }).code === 'SQLITE_BUSY') throw new StateDirInUse(this.dir, readHolder(this.dir));
      throw new Error(`cannot open the state database ${file}: ${(err as Error).message}`, { cause: err });
    }
    this.db = db;
    writeFileSync(join(this.dir, HOLDER_FILE), `${process.pid}\n`, { mode: 0o600 });
    this.sql = statements(db);
    this.auditLocation = join(this.dir, AUDIT_FILE);
    this.audit = new LogFile(this.auditLocation);
    // Expired rows are invisible to reads already; this gives their space back (a failed sweep is tried again next time).
    const sweep = () => void this.write(() => this.sql.sweep.run({ now: this.clock.now() })).catch(() => undefined);
    this.sweepTimer = setInterval(sweep, 60_000).unref();
  }

  isReady(): boolean {
    return !this.closed && this.db.open;
  }

  async get<T>(ns: string, key: string): Promise<T | undefined> {
    return this.read(ns, () => {
      const row = this.sql.get.get({ ns, key, now: this.clock.now() });
      return row === undefined ? undefined : (JSON.parse(row.value) as T);
    });
  }

  async set(ns: string, key: string, value: unknown, opts?: SetOptions): Promise<void> {
    const json = encode(value);
    await this.write(() => this.sql.set.run({ ns, key, value: json, expires: this.expiry(opts) }), ns);
  }

  async setIfAbsent(ns: string, key: string, value: unknown, opts?: SetOptions): Promise<boolean> {
    const json = encode(value);
    return this.write(
      () => this.sql.setIfAbsent.run({ ns, key, value: json, expires: this.expiry(opts), now: this.clock.now() }).changes === 1,
      ns,
    );
  }

  async prepend(ns: string, key: string, value: unknown, keep: number, opts?: SetOptions): Promise<void> {
    // One synchronous read and write inside this process's transaction: nothing else can come in between.
    await this.write(() => {
      const row = this.sql.get.get({ ns, key, now: this.clock.now() });
      const list = row === undefined ? [] : (JSON.parse(row.value) as unknown[]);
      this.sql.set.run({ ns, key, value: encode([value, ...list].slice(0, Math.max(1, keep))), expires: this.expiry(opts) });
    }, ns);
  }

  async delete(ns: string, key: string): Promise<boolean> {
    checkNamespace(ns);
    return this.write(() => {
      const row = this.sql.delete.get({ ns, key });
      return row !== undefined && (row.expires_at === null || row.expires_at > this.clock.now());
    });
  }

  async entries<T>(ns: string): Promise<Array<[string, T]>> {
    return this.read(ns, () =>
      this.sql.entries.all({ ns, now: this.clock.now() }).map((r): [string, T] => [r.key, JSON.parse(r.value) as T]),
    );
  }

  async appendAudit(record: object): Promise<void> {
    await this.audit.append(JSON.stringify(record) + '\n');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweepTimer);
    if (this.batch) this.commit(this.batch);
    await this.audit.close();
    rmSync(join(this.dir, HOLDER_FILE), { force: true });
    // Checkpoints the WAL into the database file and lets go of the lock.
    this.db.close();
  }

  /** Runs a change in the open batch (one commit and sync per event-loop turn); resolves once committed, rejects with the batch. */
  private async write<R>(change: () => R, ns?: string): Promise<R> {
    if (ns !== undefined) checkNamespace(ns);
    if (this.closed) throw new Error('the state store is closed');
    const sync = ns === undefined || !NOT_SYNCED.has(ns);
    // SQLite sets a commit's sync level before its transaction begins: a change that must be synced does not join a
    // batch that will not be (that one is committed now); an unsynced change may join a synced batch.
    if (this.batch && sync && !this.batch.sync) this.commit(this.batch);
    const batch = this.batch ?? this.openBatch(sync);
    let result: R;
    try {
      result = change();
    } catch (err) {
      // SQLITE_FULL and I/O errors may roll the whole transaction back: then every change of this batch is lost.
      if (!this.db.inTransaction) this.fail(batch, err);
      throw err;
    }
    await batch.committed;
    return result;
  }

  /** A read: answered at once, or, when it may have seen changes not yet committed, once they are. */
  private async read<R>(ns: string, query: () => R): Promise<R> {
    checkNamespace(ns);
    if (this.closed) throw new Error('the state store is closed');
    const batch = this.batch;
    const result = query();
    if (batch) await batch.committed;
    return result;
  }

  private openBatch(sync: boolean): Batch {
    this.db.pragma(`synchronous = ${sync ? 'FULL' : 'NORMAL'}`);
    this.db.exec('BEGIN IMMEDIATE');
    let settle!: (err?: Error) => void;
    const committed = new Promise<void>((resolve, reject) => {
      settle = (err) => (err === undefined ? resolve() : reject(err));
    });
    // Each caller awaits it; this keeps a batch nobody awaits any more from reporting an unhandled rejection.
    committed.catch(() => undefined);
    const batch: Batch = { committed, settle, sync };
    this.batch = batch;
    setImmediate(() => this.commit(batch));
    return batch;
  }

  private commit(batch: Batch): void {
    if (this.batch !== batch) return;
    this.batch = undefined;
    try {
      this.db.exec('COMMIT');
      batch.settle();
    } catch (err) {
      this.fail(batch, err);
    }
  }

  private fail(batch: Batch, err: unknown): void {
    if (this.batch === batch) this.batch = undefined;
    if (this.db.inTransaction) {
      try {
        this.db.exec('ROLLBACK');
      } catch {
        // Rolled back already.
      }
    }
    batch.settle(err instanceof Error ? err : new Error('state write failed', { cause: err }));
  }

  private expiry(opts: SetOptions | undefined): number | null {
    return opts?.ttlMs !== undefined ? this.clock.now() + opts.ttlMs : null;
  }
}

/** Changes sharing one transaction; `committed` settles when it is on disk, or rejects when it is not. */
interface Batch {
  committed: Promise<void>;
  settle(err?: Error): void;
  sync: boolean;
}

function readHolder(dir: string): string | undefined {
  try {
    return readFileSync(join(dir, HOLDER_FILE), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** An append-only log file: lines appended while a write is on its way share the next; opened per write, so rotation is followed. */
class LogFile {
  /** Lines not yet written: the write queued last takes them all when it starts. */
  private pending: string[] = [];
  private syncTimer: NodeJS.Timeout | undefined;
  /** The write queued last; the next one starts when it ends, whatever its outcome. */
  private last: Promise<void> = Promise.resolve();

  constructor(private readonly path: string) {}

  append(line: string): Promise<void> {
    // Lines already pending mean a write is queued and not started: this one goes out with it.
    if (this.pending.push(line) === 1) this.last = this.last.catch(() => undefined).then(() => this.write());
    return this.last;
  }

  /** Writes what is pending and syncs it now (at close). */
  async close(): Promise<void> {
    await this.last.catch(() => undefined);
    clearTimeout(this.syncTimer);
    await this.sync();
  }

  private async sync(): Promise<void> {
    this.syncTimer = undefined;
    // Nothing written yet, or the log was rotated away: the next write syncs what it adds.
    await syncFile(this.path).catch(() => undefined);
  }

  private async write(): Promise<void> {
    const text = this.pending.join('');
    this.pending = [];
    const handle = await open(this.path, 'a', 0o600);
    try {
      const created = (await handle.stat()).size === 0;
      await handle.appendFile(text);
      // A new file's name is durable once its directory is synced.
      if (created) await syncFile(resolve(this.path, '..'));
      // Written to the OS before the action is reported, synced within a second: a power cut may lose the last second
      // of records. Bench: a sync per record made the overhead 1.32x instead of 1.26x.
      this.syncTimer ??= setTimeout(() => void this.sync(), 1_000).unref();
    } finally {
      await handle.close();
    }
  }
}

async function syncFile(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
