// Readers for the JSON the bench receives (BILL's answers, the bot's replies, the children's messages and log lines):
// it comes in as `unknown` and is narrowed here, so a malformed answer reads as absent instead of throwing mid-run.

export const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null;

/** x when it is an array, otherwise an empty one. */
export const list = (x: unknown): unknown[] => (Array.isArray(x) ? x : []);

/** x[key] when x is an object. */
export const field = (x: unknown, key: string): unknown => (isRecord(x) ? x[key] : undefined);

/** x[key] when it is a string. */
export function text(x: unknown, key: string): string | undefined {
  const v = field(x, key);
  return typeof v === 'string' ? v : undefined;
}
