// Which buttons each card message the bot posted carries, so a click edits only the message that carries its button.
import { createHash } from 'node:crypto';
import type { Clock } from '../infra/clock.js';
import { withEditLock } from '../infra/state/editLock.js';
import { NS, type StateStore } from '../infra/state/types.js';
import type { AdaptiveCard, Json } from '../cards/card.js';
import { conversationOf, type ConversationScope } from '../features/types.js';
import { isObject } from './routes.js';

type Where = Pick<ConversationScope, 'tenantId' | 'conversationId'>;

/** How long a posted card's buttons may still edit it; a click on an older card still runs, answered as a new reply. */
const CARD_MESSAGE_TTL_MS = 7 * 24 * 3_600_000;

/** The most button records kept per message (its own buttons plus those of each view its clickers were shown). */
const MAX_BUTTONS = 60;

/** A JSON.stringify replacer that sorts every object's keys: the same data prints the same whatever order its keys came in. */
function sortedKeys(_key: string, value: unknown): unknown {
  if (!isObject(value)) return value;
  const keys = Object.keys(value).sort();
  return Object.fromEntries(keys.map((k) => [k, value[k]]));
}

/** A button as recorded: its data fields' names and a digest of their values (a click also carries its inputs' values). */
function print(data: Record<string, unknown>, keys: string[]): string {
  const picked = Object.fromEntries(keys.map((k) => [k, data[k]]));
  return `${keys.join(',')}|${createHash('sha256').update(JSON.stringify(picked, sortedKeys)).digest('base64url').slice(0, 22)}`;
}

/**
 * The properties of Adaptive Card elements under which an action can sit. Walking only these, not every text, keeps a
 * large reply with no buttons (help) cheap: it was ~2% of the bot's CPU per help command in the bench.
 */
const CAN_HOLD_ACTIONS = 'body actions items columns rows cells inlines selectAction card fallback refresh action'.split(' ');

/** The data of every Action.Execute / Action.Submit in a card (its fallbacks and nested cards included). */
export function buttonsOf(card: AdaptiveCard | Json | undefined): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  const walk = (node: unknown, depth: number): void => {
    if (!node || typeof node !== 'object' || depth > 30) return;
    if (Array.isArray(node)) {
      for (const n of node) walk(n, depth + 1);
      return;
    }
    const o = node as Record<string, unknown>;
    if ((o.type === 'Action.Execute' || o.type === 'Action.Submit') && isObject(o.data)) out.push(o.data);
    for (const k of CAN_HOLD_ACTIONS) if (k in o) walk(o[k], depth + 1);
  };
  walk(card, 0);
  return out;
}

function keyOf({ tenantId, conversationId }: Where, activityId: string): string {
  // A channel post is clicked from its thread ("19:…;messageid=<post id>"): the record is kept under the channel.
  return `${(tenantId ?? '').toLowerCase()}|${conversationOf(conversationId)}|${activityId}`;
}

export class CardMessages {
  constructor(
    private readonly state: StateStore,
    private readonly clock: Clock,
  ) {}

  /**
   * Message `activityId` now carries this card's buttons: `new` (just posted), `edited` (for everyone: its old buttons
   * are gone) or `shown` (an invoke answer replaced it on one client: its old buttons and these may both be clicked).
   */
  async posted(where: Where, activityId: string | undefined, card: AdaptiveCard, how: 'new' | 'edited' | 'shown'): Promise<void> {
    if (!activityId || !where.conversationId) return;
    const prints = buttonsOf(card).map((d) => print(d, Object.keys(d).sort()));
    if (prints.length === 0 && how !== 'edited') return;
    const key = keyOf(where, activityId);
    const write = async () => {
      const before = how === 'shown' ? ((await this.state.get<string[]>(NS.cardMessages, key)) ?? []) : [];
      const all = [...new Set([...prints, ...before])].slice(0, MAX_BUTTONS);
      await this.state.set(NS.cardMessages, key, all, { ttlMs: CARD_MESSAGE_TTL_MS });
    };
    // A new message's record has no other writer. A message changed from two places at once (two people's answers
    // shown on it, an edit for everyone) is changed one at a time: both answers' buttons stay, an edit's stay gone.
    if (how === 'new') await write();
    else await withEditLock({ store: this.state, clock: this.clock }, { ns: NS.cardMessages, key }, write);
  }

  /** Does message `activityId` of this conversation carry a button whose data the click carries unchanged? */
  async carries(where: Where, activityId: string | undefined, clicked: Record<string, unknown>): Promise<boolean> {
    if (!activityId || !where.conversationId) return false;
    const prints = await this.state.get<string[]>(NS.cardMessages, keyOf(where, activityId));
    if (!Array.isArray(prints)) return false;
    return prints.some((p) => {
      const keys = p.slice(0, p.lastIndexOf('|')).split(',').filter(Boolean);
      return keys.every((k) => k in clicked) && print(clicked, keys) === p;
    });
  }
}
