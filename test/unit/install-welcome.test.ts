// The welcome card: which organisation (or how to link one), the three most useful commands, valid and small.
import { describe, expect, it } from 'vitest';
import { welcomeCard } from '../../src/cards/welcome.js';
import { adaptiveCard } from '../../src/cards/card.js';
import type { CommandDefinition } from '../../src/features/types.js';
import type { BindingState } from '../../src/bindings/bindings.js';
import { checkCard } from '../harness/cards.js';

const def = (name: string, rank: number, usage = name): CommandDefinition => ({
  name,
  usage,
  description: `What ${name} does`,
  examples: [usage.replace(/<.*>/, '1042')],
  upstream: true,
  rank,
  run: async () => adaptiveCard([], { summary: name }),
});

const commands = [
  def('help', 0),
  def('bills due', 10, 'bills due [days]'),
  def('invoice', 20, 'invoice <number>'),
  def('vendor', 30, 'vendor <name>'),
  def('payments', 40),
  def('link', 90, 'link <BILL organisation id>'),
];

const states: Array<[string, BindingState]> = [
  ['bound by the deployment', { state: 'bound', orgId: '00801AAAAAAAAAAAAAAA', source: 'deployment' }],
  ['linked', { state: 'bound', orgId: '00801BBBBBBBBBBBBBBB', source: 'link' }],
  ['not linked', { state: 'unbound', reason: 'notLinked' }],
  ['no org configured', { state: 'unbound', reason: 'noOrgConfigured' }],
  ['stale link', { state: 'orgNotAllowed', orgId: '00801CCCCCCCCCCCCCCC' }],
];

describe('the welcome card', () => {
  it('suggests the three best-ranked BILL commands, never help or link', () => {
    const reply = welcomeCard({ kind: 'channel', binding: states[0]![1], sandbox: false, commands, version: '1' });
    const text = JSON.stringify(reply.card);
    for (const name of ['bills due', 'invoice', 'vendor']) expect(text).toContain(`What ${name} does`);
    for (const name of ['help', 'payments', 'link']) expect(text).not.toContain(`What ${name} does`);
    expect(reply.summary).toContain('Try: bills due, invoice, vendor.');
  });

  it.each(states)('is a valid Adaptive Card 1.5 under 40 KB when the team is %s', (_label, binding) => {
    const reply = welcomeCard({
      kind: 'channel',
      teamName: 'Finance *ops*',
      binding,
      sandbox: false,
      commands,
      version: '1.2.3',
    });
    const check = checkCard(reply.card);
    expect(check.problems).toEqual([]);
    expect(check.bytes).toBeLessThan(40 * 1024);
    expect(reply.summary.length).toBeLessThanOrEqual(200);
  });

  it('names the organisation a team uses, the demo nature of the sandbox, and escapes the team name', () => {
    const reply = welcomeCard({
      kind: 'channel',
      teamName: 'Finance *ops*',
      binding: states[0]![1],
      sandbox: true,
      commands,
      version: '1.2.3',
    });
    const text = JSON.stringify(reply.card);
    expect(text.replace(/\u2060/g, '')).toContain('This team uses BILL organisation **…AAAA**');
    expect(text).toContain('simulated data');
    expect(text).toContain('billbridge joined Finance \\\\*ops\\\\*');
    expect(reply.summary).toContain('Try: bills due, invoice, vendor');
  });

  it('shows the whole team only the end of the BILL organisation id, in the card and its summary (the whole id is for admins, in status)', () => {
    for (const [, binding] of states.filter(([, b]) => 'orgId' in b)) {
      const reply = welcomeCard({ kind: 'channel', teamName: 'Finance', binding, sandbox: false, commands, version: '1' });
      const orgId = (binding as { orgId: string }).orgId;
      expect(JSON.stringify(reply.card)).not.toContain(orgId);
      expect(reply.summary).not.toContain(orgId);
      expect(JSON.stringify(reply.card).replace(/\u2060/g, '')).toContain(`**…${orgId.slice(-4)}**`);
    }
  });

  it('offers buttons only for suggestions that run as typed, and only when there is an organisation', () => {
    const bound = welcomeCard({ kind: 'channel', binding: states[0]![1], sandbox: false, commands, version: '1' });
    const titles = (bound.card.actions ?? []).map((a) => a.title);
    expect(titles).toEqual(['Show all commands']);
    const withPlain = welcomeCard({
      kind: 'channel',
      binding: states[0]![1],
      sandbox: false,
      commands: [def('payments', 1), ...commands],
      version: '1',
    });
    expect((withPlain.card.actions ?? []).map((a) => a.title)).toEqual(['payments', 'Show all commands']);
    const unbound = welcomeCard({
      kind: 'channel',
      binding: states[2]![1],
      sandbox: false,
      commands: [def('payments', 1), ...commands],
      version: '1',
    });
    expect((unbound.card.actions ?? []).map((a) => a.title)).toEqual(['Show all commands']);
  });

  it('tells an unlinked team and an unlinked chat how an admin links them', () => {
    const team = JSON.stringify(welcomeCard({ kind: 'channel', binding: states[2]![1], sandbox: false, commands, version: '1' }).card);
    expect(team).toContain('This team is not linked to a BILL organisation yet');
    expect(team).toContain('@billbridge link {BILL organisation id}** in any channel of this team');
    const chat = JSON.stringify(welcomeCard({ kind: 'personal', binding: states[2]![1], sandbox: false, commands, version: '1' }).card);
    expect(chat).toContain('This chat is not linked');
    expect(chat).toContain('no mention needed');
  });
});
