// Text from BILL, Teams or a person printed to an operator's terminal (the CLIs, start-up failures): its control
// characters are shown escaped, so a name carrying ESC [ 2J (clear screen), an OSC title or a right-to-left override
// cannot run in the terminal or forge a line.

/** C0, DEL and C1 controls, and the bidirectional overrides and isolates (which reorder what a terminal shows). */
const CONTROL = /[\p{Cc}\u202a-\u202e\u2066-\u2069]/gu;

const NAMED: Partial<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** `text` with each control character written as an escape (`\x1b`, `\u202e`); line breaks too unless `newlines`. */
export function visible(text: string, opts: { newlines?: boolean } = {}): string {
  return text.replace(CONTROL, (c) => {
    if (c === '\n' && opts.newlines) return c;
    const code = c.charCodeAt(0);
    return NAMED[c] ?? (code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
  });
}
