// Text from BILL or a person printed to an operator's terminal shows its control characters escaped: a vendor name
// carrying ESC [ 2J, an OSC title or a right-to-left override cannot run in the terminal of `npm run chat`.
import { describe, expect, it } from 'vitest';
import { visible } from '../../src/infra/visible.js';
import { renderCard } from '../../tools/renderCard.js';

// eslint-disable-next-line no-control-regex -- control characters are what must not reach the terminal
const CONTROLS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;
const HOSTILE = 'Acme\x1b[2J\x1b]0;owned\x07\u009b31m\u202etxt.exe\rX';

describe('visible', () => {
  it('escapes C0, DEL, C1 and bidirectional overrides, and keeps line breaks only when asked', () => {
    expect(visible(HOSTILE)).toBe('Acme\\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\u202etxt.exe\\rX');
    expect(visible('a\nb\tc\x7f')).toBe('a\\nb\\tc\\x7f');
    expect(visible('a\nb', { newlines: true })).toBe('a\nb');
    expect(visible('Café — 東京 👍')).toBe('Café — 東京 👍');
  });
});

describe('npm run chat renders a card', () => {
  it("a BILL vendor name carrying ESC [ 2J, an OSC title and a right-to-left override, in a title, a fact, a table cell and a button, reaches the operator's terminal escaped", () => {
    const card = {
      type: 'AdaptiveCard',
      body: [
        { type: 'TextBlock', text: `**${HOSTILE}**`, weight: 'Bolder' },
        { type: 'FactSet', facts: [{ title: 'Vendor', value: HOSTILE }] },
        { type: 'Table', rows: [{ cells: [{ items: [{ type: 'TextBlock', text: HOSTILE }] }] }] },
      ],
      actions: [{ type: 'Action.Execute', title: HOSTILE, verb: 'run' }],
    };
    const { text, actions } = renderCard(card, { color: false });
    expect(text).not.toMatch(CONTROLS);
    expect(text).toContain('Acme\\x1b[2J');
    expect(actions[0]!.title).not.toMatch(CONTROLS);
  });
});
