// Search BILL from the compose box: the route of Teams' composeExtension/query invoke, in front of the
// search feature (src/features/search), with the bot's own tenant, audit and rate steps; answers in Teams' shapes.
import {
  CardFactory,
  type Activity,
  type InvokeResponse,
  type MessagingExtensionAttachment,
  type MessagingExtensionResponse,
} from 'botbuilder';
import { adaptiveCard, escapeMarkdown, text } from '../cards/card.js';
import { searchCommand } from '../features/search/commands.js';
import type { ComposeSearch, SearchAnswer, SearchResult } from '../features/search/search.js';
import { isObject, type Route, type Step } from './routes.js';

/** The query of a composeExtension/query: its command, the typed text (none on Teams' initial run) and the page asked for. */
function queryOf(activity: Activity): { commandId: unknown; text: string | undefined; skip: number; count: number } {
  const value = isObject(activity.value) ? activity.value : {};
  const parameters = Array.isArray(value.parameters) ? value.parameters.filter(isObject) : [];
  const typed = parameters.find((p) => p.name !== 'initialRun');
  const initialRun = parameters.some((p) => p.name === 'initialRun') && typed === undefined;
  const options = isObject(value.queryOptions) ? value.queryOptions : {};
  const num = (v: unknown, fallback: number) => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
  return {
    commandId: value.commandId,
    text: initialRun ? undefined : typeof typed?.value === 'string' ? typed.value : '',
    skip: num(options.skip, 0),
    count: num(options.count, 25),
  };
}

/**
 * A result row: the card Teams inserts when it is picked, and its compact preview. The preview has no tap (which would
 * make Teams ask again with composeExtension/selectItem): the card is already here, and Microsoft's Teams emulator for
 * bots (Agents Playground) lists no result whose preview has a tap.
 */
function attachment(result: SearchResult): MessagingExtensionAttachment {
  const { title, subtitle, text: line } = result.preview;
  return { ...CardFactory.adaptiveCard(result.card.card), preview: CardFactory.thumbnailCard(title, line, [], [], { subtitle }) };
}

function answerOf(answer: SearchAnswer): InvokeResponse<MessagingExtensionResponse> {
  const composeExtension =
    answer.message !== undefined
      ? { type: 'message' as const, text: answer.message }
      : { type: 'result' as const, attachmentLayout: 'list' as const, attachments: answer.results.map(attachment) };
  return { status: 200, body: { composeExtension } };
}

/**
 * The search route. Its steps run in order: the answer (last to finish: a refusal by a later step becomes a message
 * result), then the bot's tenant, audit and per-person rate steps, as a typed command does.
 */
export function composeSearchRoute(search: Pick<ComposeSearch, 'query'>, asCommand: readonly Step[]): Route {
  const answer: Step = async (turn, next) => {
    const { commandId, text: typed } = queryOf(turn.activity);
    const name = `search ${searchCommand(commandId)?.id ?? 'unknown'}`;
    const args = typed ? [typed] : [];
    turn.line = { parsed: { kind: 'command', name, args, argText: args.join(' ') }, command: undefined };
    const result = await next();
    turn.answer ??= answerOf({ results: [], message: result?.reply.summary ?? 'Nothing to show.', outcome: 'ok' });
    return result;
  };
  return {
    name: 'compose: search',
    select: (a) => a.type === 'invoke' && a.name === 'composeExtension/query',
    steps: [answer, ...asCommand],
    run: async (turn) => {
      const { scope, caller, correlationId, log } = turn;
      const got = await search.query({ scope, caller, locale: turn.activity.locale, correlationId, log, ...queryOf(turn.activity) });
      turn.answer = answerOf(got);
      // What the audit step records of the search (the turn's command line).
      const summary = got.message ?? `${got.results.length} results`;
      const reply = got.results[0]?.card ?? adaptiveCard([text(escapeMarkdown(summary))], { summary });
      return { reply, outcome: got.outcome, orgId: got.orgId, error: got.error };
    },
  };
}
