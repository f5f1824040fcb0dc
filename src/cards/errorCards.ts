// The one place where a typed error becomes what a person sees. Upstream messages are never shown verbatim.
import {
  BillApiError,
  DependencyUnavailable,
  FilterValueError,
  Forbidden,
  InputError,
  LimitExceeded,
  NotBound,
  NotLinked,
  TenantNotAllowed,
} from '../errors.js';
import type { ConversationKind } from '../features/types.js';
import { withoutUrlCredentials } from '../infra/log.js';
import { adaptiveCard, escapeMarkdown, executeAction, footer, plainText, text, title, type CardAction, type CardReply } from './card.js';
import { typed } from './help.js';

export interface ErrorContext {
  correlationId: string;
  /** Where the person is, so hints say what fits there ("@billbridge link" in a channel; no "open a personal chat" in one). */
  kind?: ConversationKind;
  /** The command line to offer as "Try again", when retrying makes sense. */
  retryCommand?: string;
  /** Whose command it is (retryOwnerOf): the bot runs a Try again only for them. */
  retryBy?: string;
  /** The instant `ms` from now (on the app clock) for the person, time zone aware, e.g. "11:00". */
  timeIn?: (ms: number) => string;
}

/** A heading and its line (or lines); with `ref`, the reference a person gives their administrator goes in the footer. */
function said(heading: string, lines: string | string[], summary: string, opts: { ref?: string; actions?: CardAction[] } = {}): CardReply {
  const body = [title(heading), ...[lines].flat().map((line) => text(line))];
  if (opts.ref) body.push(footer(`Reference: ${opts.ref}`));
  return adaptiveCard(body, { summary, actions: opts.actions });
}

export function errorReply(err: unknown, ctx: ErrorContext): CardReply {
  const ref = ctx.correlationId;
  const retry = ctx.retryCommand
    ? [executeAction('Try again', { verb: 'run', command: ctx.retryCommand, ...(ctx.retryBy ? { by: ctx.retryBy } : {}) })]
    : undefined;

  if (err instanceof InputError) {
    // The message often echoes what was typed ("No vendor starts with ..."): plain text, escaped here, and a URL's
    // password in it is not repeated. The hint is our markdown; any typed text in it was escaped where it was written.
    const message = withoutUrlCredentials(err.userMessage);
    const body = [title(escapeMarkdown(message))];
    if (err.understood) body.push(text(`I understood: ${escapeMarkdown(withoutUrlCredentials(err.understood))}`, { subtle: true }));
    body.push(text(err.hint));
    return adaptiveCard(body, { summary: `${message.replace(/[^.!?…]$/, '$&.')} ${plainText(err.hint)}` });
  }
  if (err instanceof FilterValueError) {
    return said(
      "I can't search for that",
      `The ${escapeMarkdown(err.field)} you typed contains characters BILL searches can't take (quotes, commas or colons). Try a shorter part of the name.`,
      `I can't search for that ${err.field}; leave out quotes, commas and colons.`,
    );
  }
  if (err instanceof LimitExceeded) {
    const when = ctx.timeIn?.(err.retryInMs);
    const s = Math.max(1, Math.ceil(err.retryInMs / 1000));
    const min = Math.ceil(err.retryInMs / 60_000);
    if (err.budget === 'bill.email') {
      const at = when ? `at ${when} (in ${s} s)` : `in ${s} s`;
      return said(
        'BILL email limit reached',
        `BILL sends at most 5 invitation emails a minute. Nothing was sent; try again ${at}.`,
        `BILL email limit reached; nothing was sent. Try again ${at}.`,
        { ref },
      );
    }
    switch (err.reason) {
      case 'hourly':
        return said(
          'BILL hourly limit reached',
          `This organisation has used its BILL API requests for this hour. They reset at ${when ?? 'the top of the hour'} (in about ${min} min).`,
          `BILL hourly limit reached; resets ${when ? 'at ' + when : 'at the top of the hour'}.`,
          { ref },
        );
      case 'logins':
        return said(
          'BILL sign-in limit reached',
          `Too many BILL sign-ins this hour. Try again in ${min} min.`,
          'BILL sign-in limit reached; try again later.',
          { ref },
        );
      case 'userRate':
        return said(
          'One moment, please',
          `You've sent a lot of commands in the last minute. Try again in ${s} s.`,
          `Too many commands; try again in ${s} s.`,
        );
      default: {
        // Spend & Expense has a budget of its own (calls a minute per token): its pause is named as its own.
        const who = err.budget.startsWith('spend') ? 'BILL Spend & Expense' : 'BILL';
        const busy = `${who} is busy — try again in ${s} s.`;
        return said(`${who} is busy`, busy, busy, { ref, actions: retry });
      }
    }
  }
  if (err instanceof TenantNotAllowed) {
    return said(
      'billbridge is not available here',
      "This organisation's Microsoft 365 tenant is not allowed to use this billbridge deployment. Ask your billbridge administrator.",
      'billbridge is not available in this tenant.',
    );
  }
  if (err instanceof NotBound) {
    const why =
      err.reason === 'orgNotAllowed'
        ? 'The BILL organisation this conversation was linked to is no longer allowed by this deployment.'
        : 'This team or chat is not linked to a BILL organisation yet.';
    // Teams link from any of their channels; chats link themselves (src/bindings/bindings.ts).
    return said(
      'No BILL organisation linked',
      [why, `A billbridge admin can link it by typing **${typed('link {BILL organisation id}', ctx.kind)}** here.`],
      `${why} An admin can link it with "link {BILL organisation id}".`,
    );
  }
  // `connect` works in a personal chat only: there, say "type connect"; elsewhere, say where to go.
  const connectHere = ctx.kind === 'personal' ? 'Type **connect** here' : 'Open a personal chat with me and type **connect**';
  const connectWhere = ctx.kind === 'personal' ? 'type connect here' : 'type connect in a personal chat with me';
  if (err instanceof NotLinked && err.reason === 'tokenRefused') {
    return said(
      'BILL no longer accepts your sign-in',
      `The BILL token you connected was deleted or has stopped working. ${connectHere} to link a new one.`,
      `BILL no longer accepts your token: ${connectWhere} to link a new one.`,
    );
  }
  if (err instanceof NotLinked) {
    return said(
      'Connect your BILL account first',
      `Approvals run as you in BILL. ${connectHere}.`,
      `Connect your BILL account first: ${connectWhere}.`,
    );
  }
  if (err instanceof Forbidden) {
    return said('Not allowed', escapeMarkdown(err.userMessage), err.userMessage);
  }
  if (err instanceof DependencyUnavailable) {
    return said(
      'Temporarily unavailable',
      'billbridge cannot reach its shared store right now. Nothing was sent to BILL. Try again in a minute.',
      'billbridge is temporarily unavailable; try again in a minute.',
      { ref, actions: retry },
    );
  }
  if (err instanceof BillApiError) {
    switch (err.category) {
      case 'notFound':
        return said('Not found in BILL', 'BILL has no record with that id or number in this organisation.', 'Not found in BILL.');
      case 'credentials':
        return said(
          'BILL sign-in failed',
          'billbridge could not sign in to BILL with its configured credentials. An administrator needs to check them.',
          'BILL sign-in failed; an administrator needs to check the credentials.',
          { ref },
        );
      case 'hourlyLimit':
        return errorReply(new LimitExceeded('bill.requests', err.retryAfterMs ?? 3_600_000, 'hourly'), ctx);
      case 'concurrencyLimit':
      case 'rateLimited':
        return errorReply(new LimitExceeded(err.api === 'spend' ? 'spend.requests' : 'bill', err.retryAfterMs ?? 5_000, 'busy'), ctx);
      default:
        return said(
          "BILL didn't answer as expected",
          'Something went wrong talking to BILL. Try again in a moment.',
          "BILL didn't answer as expected; try again in a moment.",
          { ref, actions: retry },
        );
    }
  }
  return said(
    'Something went wrong',
    'billbridge hit an unexpected error. Try again; if it keeps happening, give your administrator the reference below.',
    `Something went wrong (reference ${ref}).`,
    { ref, actions: retry },
  );
}

/** Someone pressed another person's Try again: nothing was run (it would have run their words with your authority). */
export function notYourRetryReply(): CardReply {
  return said(
    'This Try again is not yours',
    'Only the person who sent this command can retry it. Nothing was run. To run a command yourself, type it.',
    'Only the person who sent this command can retry it; nothing was run.',
  );
}
