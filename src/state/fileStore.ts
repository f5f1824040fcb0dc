// Single-instance state: an append-only JSON-lines journal per namespace, compacted now and then; writes made
// while one is on its way to disk are grouped into the next append, and each call resolves once its change is there.
// In memory each value is kept as its JSON text, the form it has on disk: a copy no caller can change, about a third
// of the memory of the objects it stands for, parsed again on each read. A large value (the replicas' shards, which
// their owners hold as objects anyway and read back only after a restart) is kept on disk only once it is there:
// memory holds where its text lies in the journal, and a read reads it back from the file.
import { mkdirSync, readFileSync } from 'node:fs';
import { open, readFile, rename, rm, stat, writeFile, type FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Clock } from '../clock.js';
import type { Claim, SetOptions, StateStore } from './types.js';

interface Entry {
  /** The value as JSON text; undefined for a large value kept on disk only (`at`, `n`). */
  j?: string;
  /** Where the value's JSON text starts in the namespace's journal file, in bytes, and how many bytes it has. */
  at?: number;
  n?: number;
  /** Expiry time in ms since epoch. */
  e?: number;
}

/** A change waiting for the next append: its line, and for a set, the entry it wrote (to learn where it lands). */
interface PendingLine {
  line: string;
  key?: string;
  entry?: Entry;
}

/** Values whose JSON text is at least this long are kept on disk only once written (replica shards are 10–40 KB). */
export const DISK_ONLY_CHARS = 8 * 1024;

/** One journal line: a set (`v`, optional `e`) or a delete (`d`). */
interface JournalLine {
  k: string;
  v?: unknown;
  e?: number;
  d?: 1;
}

interface Namespace {
  map: Map<string, Entry>;
  /** Lines waiting for the next append. */
  pending: PendingLine[];
  /** Bytes in the journal file now, and right after the last compaction. */
  bytes: number;
  /** A failed append may have left part of its lines: the file's size is read again before offsets are trusted. */
  sizeUnknown: boolean;
  /** Reads of values kept on disk and the journal's rewrite (which moves them) take turns through this. */
  gate: Gate;
  compactedBytes: number;
  /** Rewrite at the next flush even with nothing pending (expired entries swept, legacy file migrated). */
  compactDue: boolean;
  /** The file ends in a line torn by a crash: the next append starts on a fresh line. */
  torn: boolean;
  /** Appends pending lines (and compacts); changes made while one flush runs share the next. */
  flusher: Coalescer;
}

/**
 * Runs a task so that each call resolves after a run that started after it: calls made while a run is on its way
 * share one follow-up run.
 */
class Coalescer {
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;

  constructor(private readonly task: () => Promise<void>) {}

  run(): Promise<void> {
    if (this.queued) return this.queued;
    if (!this.running) return this.start();
    this.queued = this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.start();
      });
    return this.queued;
  }

  /** Settles once nothing runs or waits to run. */
  async idle(): Promise<void> {
    await Promise.allSettled([this.running, this.queued]);
  }

  private start(): Promise<void> {
    const run = this.task().finally(() => {
      if (this.running === run) this.running = undefined;
    });
    this.running = run;
    return run;
  }
}

/** Runs tasks one after another. */
class Gate {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const next = this.tail.then(task, task);
    this.tail = next.catch(() => undefined);
    return next;
  }
}

/**
 * Appends to one file through a descriptor kept open (not an open and close per write); lines written while one write
 * is on its way share the next. Each call resolves once its lines are in the file.
 */
class Appender {
  private handle: Promise<FileHandle> | undefined;
  /** The inode the descriptor writes to. */
  private ino = -1;
  private pending: string[] = [];
  private readonly flusher = new Coalescer(() => {
    const lines = this.pending.join('');
    this.pending = [];
    return this.write(lines);
  });

  /** `followRenames`: before each write, a file moved or removed by someone else (log rotation) is opened anew. */
  constructor(
    private readonly path: string,
    private readonly followRenames = false,
  ) {}

  append(text: string): Promise<void> {
    this.pending.push(text);
    return this.flusher.run();
  }

  /** Writes `text` now (the caller keeps other writes to this file away meanwhile). */
  async write(text: string): Promise<void> {
    try {
      if (this.handle && this.followRenames && (await stat(this.path).then((st) => st.ino !== this.ino, () => true))) await this.close();
      if (!this.handle) {
        this.handle = open(this.path, 'a', 0o600);
        this.ino = (await (await this.handle).stat()).ino;
      }
      await (await this.handle).appendFile(text);
    } catch (err) {
      // The descriptor may be the problem (file removed, disk error): the next write opens the file afresh.
      await this.close();
      throw err;
    }
  }

  /** Closes the descriptor (before the file is replaced); the next write opens the file again. */
  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    if (handle) await handle.then((h) => h.close()).catch(() => undefined);
  }

  drain(): Promise<void> {
    return this.flusher.idle();
  }
}

const NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;
/** A journal is rewritten with only its live entries once it is this much larger than after its last rewrite. */
const COMPACT_FACTOR = 3;
const COMPACT_MIN_BYTES = 1024 * 1024;

function checkName(kind: string, name: string): void {
  if (!NAME.test(name)) throw new Error(`Invalid state ${kind} name "${name}"`);
}

/** The start of a set line up to its value (what setLine writes before the value's JSON text). */
function setLinePrefix(key: string): string {
  return `{"k":${JSON.stringify(key)},"v":`;
}

/**
 * Replays a journal read as bytes into entries; a torn last line (a crash mid-append) is skipped. With `diskOnly`,
 * a large value written in the form setLine writes is kept on disk only (`at`, `n`: where it lies in the file);
 * anything else keeps its text in memory until the next rewrite.
 */
function replayJournal(bytes: Buffer, into: Map<string, Entry>, diskOnly: boolean): Map<string, Entry> {
  let start = 0;
  while (start < bytes.length) {
    let end = bytes.indexOf(0x0a, start);
    if (end < 0) end = bytes.length;
    const raw = bytes.toString('utf8', start, end);
    const lineStart = start;
    start = end + 1;
    if (raw === '') continue;
    let line: JournalLine;
    try {
      line = JSON.parse(raw) as JournalLine;
    } catch {
      continue;
    }
    if (typeof line?.k !== 'string') continue;
    if (line.d) {
      into.delete(line.k);
      continue;
    }
    const entry = entryOf(JSON.stringify(line.v) ?? 'null', line.e);
    if (diskOnly && entry.j!.length >= DISK_ONLY_CHARS && raw === setLine(line.k, entry)) keepOnDisk(entry, line.k, lineStart);
    into.set(line.k, entry);
  }
  return into;
}

/** Reads a namespace straight from disk (tools and tests), live entries only. */
export function readNamespaceFile(dir: string, ns: string, now = Date.now()): Record<string, unknown> {
  checkName('namespace', ns);
  let bytes = Buffer.alloc(0);
  try {
    bytes = readFileSync(join(dir, `${ns}.jsonl`));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const out: Record<string, unknown> = {};
  for (const [k, entry] of replayJournal(bytes, new Map(), false)) if (entry.e === undefined || entry.e > now) out[k] = JSON.parse(entry.j!);
  return out;
}

function entryOf(j: string, e: number | undefined): Entry {
  return e !== undefined ? { j, e } : { j };
}

/** The journal line for a set, built around the value's JSON text (never serialised twice). */
function setLine(key: string, entry: Entry, text = entry.j!): string {
  return `${setLinePrefix(key)}${text}${entry.e !== undefined ? `,"e":${entry.e}` : ''}}`;
}

/**
 * From now on `entry`'s value is read from the journal: its set line starts at byte `lineStart`, and the value's
 * `n` bytes of JSON text follow the line's prefix.
 */
function keepOnDisk(entry: Entry, key: string, lineStart: number, n = Buffer.byteLength(entry.j!)): void {
  entry.at = lineStart + Buffer.byteLength(setLinePrefix(key));
  entry.n = n;
  delete entry.j;
}

export class FileStateStore implements StateStore {
  readonly kind = 'file' as const;
  readonly location: string;
  private readonly namespaces = new Map<string, Promise<Namespace>>();
  /** Journals (`<ns>.jsonl`) and logs (`<log>.log`) by file name. */
  private readonly appenders = new Map<string, Appender>();
  private readonly sweepTimer: NodeJS.Timeout;
  private closed = false;

  constructor(
    dir: string,
    private readonly clock: Clock,
  ) {
    this.location = resolve(dir);
    mkdirSync(this.location, { recursive: true, mode: 0o700 });
    // Expired entries are dropped on read; this keeps memory bounded for write-only namespaces.
    this.sweepTimer = setInterval(() => void this.sweep(), 60_000);
    this.sweepTimer.unref();
  }

  isReady(): boolean {
    return !this.closed;
  }

  async get<T>(ns: string, key: string): Promise<T | undefined> {
    const space = await this.load(ns);
    const entry = space.map.get(key);
    if (!entry) return undefined;
    if (this.expired(entry)) {
      space.map.delete(key);
      return undefined;
    }
    if (entry.j !== undefined) return JSON.parse(entry.j) as T;
    const text = await this.diskText(ns, space, key);
    return text === undefined ? undefined : (JSON.parse(text) as T);
  }

  /** How many values of a namespace are kept on disk only, and how many characters of JSON text memory holds (tests). */
  async residency(ns: string): Promise<{ entries: number; diskOnly: number; textChars: number }> {
    const space = await this.load(ns);
    let diskOnly = 0;
    let textChars = 0;
    for (const entry of space.map.values()) {
      if (entry.j === undefined) diskOnly++;
      else textChars += entry.j.length;
    }
    return { entries: space.map.size, diskOnly, textChars };
  }

  async set<T>(ns: string, key: string, value: T, opts?: SetOptions): Promise<void> {
    const space = await this.load(ns);
    this.put(space, key, value, opts);
    await space.flusher.run();
  }

  async setIfAbsent<T>(ns: string, key: string, value: T, opts?: SetOptions): Promise<boolean> {
    const { created, durable } = await this.claim(ns, key, value, opts);
    await durable;
    return created;
  }

  async claim<T>(ns: string, key: string, value: T, opts?: SetOptions): Promise<Claim> {
    const space = await this.load(ns);
    const existing = space.map.get(key);
    if (existing && !this.expired(existing)) return { created: false, durable: Promise.resolve() };
    this.put(space, key, value, opts);
    const durable = space.flusher.run();
    // Whoever holds the claim awaits it; a caller that never does must not leave a rejection unhandled.
    durable.catch(() => undefined);
    return { created: true, durable };
  }

  async delete(ns: string, key: string): Promise<boolean> {
    const space = await this.load(ns);
    const had = space.map.delete(key);
    if (had) {
      space.pending.push({ line: JSON.stringify({ k: key, d: 1 } satisfies JournalLine) });
      await space.flusher.run();
    }
    return had;
  }

  async entries<T>(ns: string): Promise<Array<[string, T]>> {
    const space = await this.load(ns);
    const texts: Array<[string, string | undefined]> = [];
    for (const [k, entry] of space.map) if (!this.expired(entry)) texts.push([k, entry.j]);
    const out: Array<[string, T]> = [];
    for (const [k, j] of texts) {
      const text = j ?? (await this.diskText(ns, space, k));
      if (text !== undefined) out.push([k, JSON.parse(text) as T]);
    }
    return out;
  }

  async append(log: string, record: Record<string, unknown>): Promise<void> {
    checkName('log', log);
    await this.appender(`${log}.log`).append(JSON.stringify(record) + '\n');
  }

  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    const spaces = await Promise.all(this.namespaces.values());
    await Promise.all(spaces.map((s) => s.flusher.idle()));
    await Promise.all([...this.appenders.values()].map(async (a) => {
      await a.drain();
      await a.close();
    }));
    this.closed = true;
  }

  private put(space: Namespace, key: string, value: unknown, opts?: SetOptions): void {
    const entry = entryOf(JSON.stringify(value) ?? 'null', opts?.ttlMs !== undefined ? this.clock.now() + opts.ttlMs : undefined);
    space.map.set(key, entry);
    space.pending.push({ line: setLine(key, entry), key, entry });
  }

  /**
   * The JSON text of a value kept on disk only, read from the journal where it was written. Undefined when the
   * entry was deleted meanwhile. Runs through the namespace's gate, so a rewrite of the journal cannot move it mid-read.
   */
  private diskText(ns: string, space: Namespace, key: string): Promise<string | undefined> {
    return space.gate.run(async () => {
      // Read what the map holds now: the entry may have been replaced meanwhile, or moved by a rewrite.
      const current = space.map.get(key);
      if (current === undefined || this.expired(current)) return undefined;
      if (current.j !== undefined) return current.j;
      const handle = await open(this.file(ns), 'r');
      try {
        const buf = Buffer.alloc(current.n!);
        const { bytesRead } = await handle.read(buf, 0, current.n!, current.at!);
        if (bytesRead !== current.n) throw new Error(`state journal ${ns}.jsonl is shorter than the entries it holds`);
        return buf.toString('utf8');
      } finally {
        await handle.close();
      }
    });
  }

  private expired(entry: Entry): boolean {
    return entry.e !== undefined && entry.e <= this.clock.now();
  }

  private load(ns: string): Promise<Namespace> {
    let loaded = this.namespaces.get(ns);
    if (!loaded) {
      checkName('namespace', ns);
      loaded = this.read(ns);
      this.namespaces.set(ns, loaded);
    }
    return loaded;
  }

  private async read(ns: string): Promise<Namespace> {
    const map = new Map<string, Entry>();
    let journal = Buffer.alloc(0);
    try {
      journal = await readFile(this.file(ns));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    replayJournal(journal, map, true);
    // A store written before the journal (one JSON object per namespace) is read once and rewritten as a journal.
    const legacy = journal.length === 0 ? await this.readLegacy(ns, map) : false;
    for (const [k, entry] of map) if (this.expired(entry)) map.delete(k);
    const bytes = journal.length;
    const torn = bytes > 0 && journal[bytes - 1] !== 0x0a;
    const space: Namespace = { map, pending: [], bytes, sizeUnknown: false, gate: new Gate(), compactedBytes: bytes, compactDue: legacy, torn, flusher: new Coalescer(() => this.flush(ns, space)) };
    return space;
  }

  private async readLegacy(ns: string, into: Map<string, Entry>): Promise<boolean> {
    let text: string;
    try {
      text = await readFile(join(this.location, `${ns}.json`), 'utf8');
    } catch {
      return false;
    }
    try {
      for (const [k, entry] of Object.entries(JSON.parse(text) as Record<string, { v: unknown; e?: number }>)) into.set(k, entryOf(JSON.stringify(entry.v) ?? 'null', entry.e));
    } catch {
      return false;
    }
    return true;
  }

  private appender(name: string): Appender {
    let a = this.appenders.get(name);
    if (!a) {
      a = new Appender(join(this.location, name), name.endsWith('.log'));
      this.appenders.set(name, a);
    }
    return a;
  }

  private file(ns: string): string {
    return join(this.location, `${ns}.jsonl`);
  }

  private async flush(ns: string, space: Namespace): Promise<void> {
    if (space.pending.length === 0) {
      if (space.compactDue) await this.compact(ns, space);
      return;
    }
    const lines = space.pending;
    space.pending = [];
    if (space.sizeUnknown) {
      space.bytes = await stat(this.file(ns)).then((st) => st.size, () => 0);
      space.sizeUnknown = false;
    }
    const lead = space.torn ? '\n' : '';
    const chunk = lead + lines.map((l) => l.line).join('\n') + '\n';
    try {
      await this.appender(`${ns}.jsonl`).write(chunk);
    } catch (err) {
      // Not on disk: keep the lines for the next attempt, in order. Part of them may be: the next append starts on
      // a fresh line, after reading the file's size again.
      space.pending = [...lines, ...space.pending];
      space.torn = true;
      space.sizeUnknown = true;
      throw err;
    }
    // Where each line landed: large values written now are read back from there from now on.
    let offset = space.bytes + lead.length;
    for (const l of lines) {
      const lineBytes = Buffer.byteLength(l.line);
      const { entry, key } = l;
      if (entry && key !== undefined && entry.j !== undefined && entry.j.length >= DISK_ONLY_CHARS && space.map.get(key) === entry) keepOnDisk(entry, key, offset);
      offset += lineBytes + 1;
    }
    space.bytes = offset;
    space.torn = false;
    if (space.compactDue || space.bytes > Math.max(COMPACT_MIN_BYTES, COMPACT_FACTOR * space.compactedBytes)) await this.compact(ns, space);
  }

  /** Rewrites the journal with one line per live entry (atomic rename); runs inside the namespace's flush chain. */
  private compact(ns: string, space: Namespace): Promise<void> {
    // Values kept on disk are read from the journal being replaced, and move to new offsets: no read meanwhile.
    return space.gate.run(() => this.rewrite(ns, space));
  }

  private async rewrite(ns: string, space: Namespace): Promise<void> {
    const target = this.file(ns);
    const live = [...space.map].filter(([, entry]) => !this.expired(entry));
    let old: Buffer | undefined;
    if (live.some(([, entry]) => entry.j === undefined)) {
      try {
        old = await readFile(target);
      } catch {
        return;
      }
    }
    const parts: string[] = [];
    const moved: Array<{ key: string; entry: Entry; lineStart: number; n: number }> = [];
    let offset = 0;
    for (const [k, entry] of live) {
      const text = entry.j ?? old!.toString('utf8', entry.at!, entry.at! + entry.n!);
      const line = setLine(k, entry, text);
      if (text.length >= DISK_ONLY_CHARS) moved.push({ key: k, entry, lineStart: offset, n: entry.n ?? Buffer.byteLength(text) });
      parts.push(line, '\n');
      offset += Buffer.byteLength(line) + 1;
    }
    const text = parts.join('');
    const tmp = `${target}.${process.pid}.tmp`;
    try {
      await writeFile(tmp, text, { mode: 0o600 });
      // The open descriptor points at the file being replaced: the next append opens the new one.
      await this.appender(`${ns}.jsonl`).close();
      await rename(tmp, target);
    } catch {
      // The journal as it stands is still complete; try again after the next appends.
      await rm(tmp, { force: true });
      return;
    }
    // Large values now lie at their place in the new file (unless replaced meanwhile: that change is pending).
    for (const m of moved) if (space.map.get(m.key) === m.entry) keepOnDisk(m.entry, m.key, m.lineStart, m.n);
    // Changes made while rewriting are still in `pending` (set by put) and go to the new file next.
    space.bytes = offset;
    space.sizeUnknown = false;
    space.compactedBytes = Math.max(space.bytes, 1);
    space.torn = false;
    if (space.compactDue) await rm(join(this.location, `${ns}.json`), { force: true });
    space.compactDue = false;
  }

  private async sweep(): Promise<void> {
    for (const [ns, loaded] of this.namespaces) {
      const space = await loaded;
      let dropped = false;
      for (const [k, entry] of space.map) {
        if (this.expired(entry)) {
          space.map.delete(k);
          dropped = true;
        }
      }
      // Expired lines leave the file when it is rewritten; rewrite a large journal now rather than let it grow.
      if (dropped && space.bytes > COMPACT_MIN_BYTES) {
        space.compactDue = true;
        await space.flusher.run().catch(() => undefined);
      }
    }
  }
}
