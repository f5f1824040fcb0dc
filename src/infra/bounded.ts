// Maps keyed by what activities and senders choose (locales, zones, sources, teams), held to a bound so they never grow.

/**
 * The value kept under `key`, else `make()`'s, kept (for immutable values such as Intl formatters, which cost tens of
 * microseconds and ~20 KB of ICU memory each). Intl accepts endless variants of a locale, so the map starts again when full.
 */
export function kept<V>(map: Map<string, V>, key: string, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    if (map.size >= 256) map.clear();
    map.set(key, value);
  }
  return value;
}

/** Deletes the oldest key (a Map keeps insertion order: its first key is the oldest). */
export function dropOldest(map: Map<string, unknown>): void {
  const first = map.keys().next();
  if (!first.done) map.delete(first.value);
}
