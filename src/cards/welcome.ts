// The welcome posted when billbridge is added to a team, a group chat or a personal chat: binding + three commands.
import type { BindingState } from '../bindings/bindings.js';
import type { CommandInfo, ConversationKind } from '../features/types.js';
import { adaptiveCard, container, escapeMarkdown, executeAction, shortId, shortRef, text, title, type CardReply } from './card.js';
import { typed, usageText, versionFooter } from './help.js';
import { SANDBOX_NOTE } from './words.js';

export interface WelcomeInput {
  kind: ConversationKind;
  /** Team name as Teams sent it (channels). */
  teamName?: string;
  binding: BindingState;
  sandbox: boolean;
  /** The registry's commands for this kind of conversation, most useful first. */
  commands: readonly CommandInfo[];
  version: string;
}

/** Commands that are about the bot, not about BILL data: never among the three suggestions. */
const NOT_SUGGESTED = new Set(['help', 'link', 'unlink']);

function bindingText(input: WelcomeInput): { line: string; summary: string } {
  const here = input.kind === 'channel' ? 'This team' : 'This chat';
  const b = input.binding;
  const where = input.kind === 'channel' ? 'in any channel of this team' : 'here';
  const link = `A billbridge admin can link it by typing **${typed('link {BILL organisation id}', input.kind)}** ${where}.`;
  switch (b.state) {
    case 'bound': {
      // The whole team reads this card: only the end of the org id (admins see it whole in status).
      const org = shortRef(b.orgId);
      const demo = input.sandbox ? ' — the demo organisation of the embedded BILL sandbox (simulated data)' : '';
      const verb = b.source === 'link' ? 'is linked to' : 'uses';
      return {
        line: `${here} ${verb} BILL organisation **${org}**${demo}.`,
        summary: `${here} ${verb} BILL organisation ${shortId(b.orgId)}.`,
      };
    }
    case 'orgNotAllowed':
      return {
        line: `${here} was linked to BILL organisation **${shortRef(b.orgId)}**, which this deployment no longer allows. ${link}`,
        summary: `${here} needs a new BILL organisation link.`,
      };
    case 'unbound':
      if (b.reason === 'noOrgConfigured') {
        return {
          line: 'No BILL organisation is configured for this billbridge yet. Ask your billbridge administrator.',
          summary: 'No BILL organisation is configured yet.',
        };
      }
      return {
        line: `${here} is not linked to a BILL organisation yet, so I can't show any BILL data here. ${link}`,
        summary: `${here} is not linked to a BILL organisation yet.`,
      };
    case 'tenantNotAllowed':
      return {
        line: "This organisation's Microsoft 365 tenant is not allowed to use this billbridge.",
        summary: 'This tenant is not allowed.',
      };
  }
}

export function welcomeCard(input: WelcomeInput): CardReply {
  const intro =
    input.kind === 'personal'
      ? 'I bring BILL — payables, receivables, payments — into Teams. Type a command here, no mention needed.'
      : `I bring BILL — payables, receivables, payments — into ${input.kind === 'channel' ? 'this team' : 'this chat'}. Mention **@billbridge** with a command and I answer in the thread.`;
  const heading = input.kind === 'channel' && input.teamName ? `billbridge joined ${escapeMarkdown(input.teamName)}` : "Hi, I'm billbridge";
  const binding = bindingText(input);
  const body = [title(heading), text(intro), container([text(binding.line)], { style: 'emphasis' })];
  const suggestions = input.commands.filter((c) => !NOT_SUGGESTED.has(c.name)).slice(0, 3);
  if (suggestions.length > 0) body.push(text('Try these', { weight: 'Bolder', separator: true }));
  for (const c of suggestions) {
    body.push(text(`**${usageText(c.usage)}** — ${c.description}`));
    const example = c.examples[0];
    if (example && example !== c.usage) body.push(text(`e.g. ${example}`, { subtle: true, size: 'Small' }));
  }
  // A button only where it can run as is (no {argument} to fill in) and there is data to show.
  const runnable = input.binding.state === 'bound' ? suggestions.filter((c) => !/[<[]/.test(c.usage)) : [];
  const actions = runnable.map((c) => executeAction(c.name, { verb: 'run', command: c.name }));
  actions.push(executeAction('Show all commands', { verb: 'run', command: 'help' }));
  body.push(versionFooter(input.sandbox ? SANDBOX_NOTE : undefined, input.version));
  const names = suggestions.map((c) => c.name).join(', ');
  return adaptiveCard(body, {
    summary: `billbridge is here. ${binding.summary}${names ? ` Try: ${names}.` : ''}`,
    actions,
  });
}
