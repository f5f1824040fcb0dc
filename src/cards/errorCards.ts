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
import { adaptiveCard, escapeMarkdown, executeAction, footer, text, title, type CardElement, type CardReply } from './card.js';
import { typed } from './help.js';

export interface ErrorContext {
  correlationId: string;
  /** Where the person is, so hints say what fits there ("@billbridge link" in a channel; no "open a personal chat" in one). */
  kind?: ConversationKind;
  /** The command line to offer as "Try again", when retrying makes sense. */
  retryCommand?: string;
  /** Whose command it is (retryOwnerOf): the bot runs a Try again only for them. */
  retryBy?: string;
  /** Formats an instant for the person (time zone aware), e.g. "11:00". */
  formatTime?: (ms: number) => string;
  /** The app clock (tests pin it); Date.now by default. */
  now?: () => number;
}

function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

function withRef(body: CardElement[], ctx: ErrorContext): CardElement[] {
  return [...body, footer(`Reference: ${ctx.correlationId}`)];
}

export function errorReply(err: unknown, ctx: ErrorContext): CardReply {
  const retry = ctx.retryCommand
    ? [executeAction('Try again', { verb: 'run', command: ctx.retryCommand, ...(ctx.retryBy ? { by: ctx.retryBy } : {}) })]
    : undefined;

  if (err instanceof InputError) {
    // The message often echoes what was typed ("No vendor starts with ..."): plain text, escaped here. The hint is
    // our markdown; any typed text in it was escaped where the hint was written.
    const body = [title(escapeMarkdown(err.userMessage))];
    if (err.understood) body.push(text(`I understood: ${escapeMarkdown(err.understood)}`, { subtle: true }));
    body.push(text(err.hint));
    return adaptiveCard(body, { summary: `${err.userMessage} ${err.hint}` });
  }
  if (err instanceof FilterValueError) {
    return adaptiveCard(
      [
        title("I can't search for that"),
        text(
          `The ${escapeMarkdown(err.field)} you typed contains characters BILL searches can't take (quotes, commas or colons). Try a shorter part of the name.`,
        ),
      ],
      { summary: `I can't search for that ${err.field}; leave out quotes, commas and colons.` },
    );
  }
  if (err instanceof LimitExceeded) {
    const when = ctx.formatTime ? ctx.formatTime((ctx.now?.() ?? Date.now()) + err.retryInMs) : undefined;
    if (err.budget === 'bill.email') {
      const at = when ? `at ${when} (in ${seconds(err.retryInMs)} s)` : `in ${seconds(err.retryInMs)} s`;
      return adaptiveCard(
        withRef(
          [title('BILL email limit reached'), text(`BILL sends at most 5 invitation emails a minute. Nothing was sent; try again ${at}.`)],
          ctx,
        ),
        { summary: `BILL email limit reached; nothing was sent. Try again ${at}.` },
      );
    }
    switch (err.reason) {
      case 'hourly':
        return adaptiveCard(
          withRef(
            [
              title('BILL hourly limit reached'),
              text(
                `This organisation has used its BILL API requests for this hour. They reset at ${when ?? 'the top of the hour'} (in about ${Math.ceil(err.retryInMs / 60_000)} min).`,
              ),
            ],
            ctx,
          ),
          {
            summary: `BILL hourly limit reached; resets ${when ? 'at ' + when : 'at the top of the hour'}.`,
          },
        );
      case 'logins':
        return adaptiveCard(
          withRef(
            [
              title('BILL sign-in limit reached'),
              text(`Too many BILL sign-ins this hour. Try again in ${Math.ceil(err.retryInMs / 60_000)} min.`),
            ],
            ctx,
          ),
          {
            summary: 'BILL sign-in limit reached; try again later.',
          },
        );
      case 'userRate':
        return adaptiveCard(
          [
            title('One moment, please'),
            text(`You've sent a lot of commands in the last minute. Try again in ${seconds(err.retryInMs)} s.`),
          ],
          {
            summary: `Too many commands; try again in ${seconds(err.retryInMs)} s.`,
          },
        );
      default:
        return adaptiveCard(withRef([title('BILL is busy'), text(`BILL is busy — try again in ${seconds(err.retryInMs)} s.`)], ctx), {
          summary: `BILL is busy — try again in ${seconds(err.retryInMs)} s.`,
          actions: retry,
        });
    }
  }
  if (err instanceof TenantNotAllowed) {
    return adaptiveCard(
      [
        title('billbridge is not available here'),
        text(
          "This organisation's Microsoft 365 tenant is not allowed to use this billbridge deployment. Ask your billbridge administrator.",
        ),
      ],
      {
        summary: 'billbridge is not available in this tenant.',
      },
    );
  }
  if (err instanceof NotBound) {
    const why =
      err.reason === 'orgNotAllowed'
        ? 'The BILL organisation this conversation was linked to is no longer allowed by this deployment.'
        : 'This team or chat is not linked to a BILL organisation yet.';
    // Teams link from any of their channels; chats link themselves (src/bindings/bindings.ts).
    return adaptiveCard(
      [
        title('No BILL organisation linked'),
        text(why),
        text(`A billbridge admin can link it by typing **${typed('link {BILL organisation id}', ctx.kind)}** here.`),
      ],
      {
        summary: `${why} An admin can link it with "link {BILL organisation id}".`,
      },
    );
  }
  // `connect` works in a personal chat only: there, say "type connect"; elsewhere, say where to go.
  const connectHere = ctx.kind === 'personal' ? 'Type **connect** here' : 'Open a personal chat with me and type **connect**';
  if (err instanceof NotLinked && err.reason === 'tokenRefused') {
    return adaptiveCard(
      [
        title('BILL no longer accepts your sign-in'),
        text(`The BILL token you connected was deleted or has stopped working. ${connectHere} to link a new one.`),
      ],
      {
        summary: `BILL no longer accepts your token: ${ctx.kind === 'personal' ? 'type connect here' : 'type connect in a personal chat with me'} to link a new one.`,
      },
    );
  }
  if (err instanceof NotLinked) {
    return adaptiveCard([title('Connect your BILL account first'), text(`Approvals run as you in BILL. ${connectHere}.`)], {
      summary: `Connect your BILL account first: ${ctx.kind === 'personal' ? 'type connect here' : 'type connect in a personal chat with me'}.`,
    });
  }
  if (err instanceof Forbidden) {
    return adaptiveCard([title('Not allowed'), text(escapeMarkdown(err.userMessage))], { summary: err.userMessage });
  }
  if (err instanceof DependencyUnavailable) {
    return adaptiveCard(
      withRef(
        [
          title('Temporarily unavailable'),
          text('billbridge cannot reach its shared store right now. Nothing was sent to BILL. Try again in a minute.'),
        ],
        ctx,
      ),
      {
        summary: 'billbridge is temporarily unavailable; try again in a minute.',
        actions: retry,
      },
    );
  }
  if (err instanceof BillApiError) {
    switch (err.category) {
      case 'notFound':
        return adaptiveCard([title('Not found in BILL'), text('BILL has no record with that id or number in this organisation.')], {
          summary: 'Not found in BILL.',
        });
      case 'credentials':
        return adaptiveCard(
          withRef(
            [
              title('BILL sign-in failed'),
              text('billbridge could not sign in to BILL with its configured credentials. An administrator needs to check them.'),
            ],
            ctx,
          ),
          {
            summary: 'BILL sign-in failed; an administrator needs to check the credentials.',
          },
        );
      case 'hourlyLimit':
        return errorReply(new LimitExceeded('bill.requests', err.retryAfterMs ?? 3_600_000, 'hourly'), ctx);
      case 'concurrencyLimit':
      case 'rateLimited':
        return errorReply(new LimitExceeded('bill', err.retryAfterMs ?? 5_000, 'busy'), ctx);
      default:
        return adaptiveCard(
          withRef([title("BILL didn't answer as expected"), text('Something went wrong talking to BILL. Try again in a moment.')], ctx),
          {
            summary: "BILL didn't answer as expected; try again in a moment.",
            actions: retry,
          },
        );
    }
  }
  return adaptiveCard(
    withRef(
      [
        title('Something went wrong'),
        text('billbridge hit an unexpected error. Try again; if it keeps happening, give your administrator the reference below.'),
      ],
      ctx,
    ),
    {
      summary: `Something went wrong (reference ${ctx.correlationId}).`,
      actions: retry,
    },
  );
}

/** Someone pressed another person's Try again: nothing was run (it would have run their words with your authority). */
export function notYourRetryReply(): CardReply {
  return adaptiveCard(
    [
      title('This Try again is not yours'),
      text('Only the person who sent this command can retry it. Nothing was run. To run a command yourself, type it.'),
    ],
    {
      summary: 'Only the person who sent this command can retry it; nothing was run.',
    },
  );
}
