// The last BILL webhook events of each organisation, for the dashboard tab: what the receiver accepted, in a line of
// words each ("Bill ACM-12 updated"), at most 10 an organisation, kept in the state store (the outbox drops an event
// once delivered, and nothing else keeps one), so every instance of a fleet shows them and a restart keeps them.
import { errorName } from '../errors.js';
import { parseNotification } from '../bill/webhooks.js';
import type { Clock } from '../infra/clock.js';
import type { Logger } from '../infra/log.js';
import { NS, type StateStore } from '../infra/state/types.js';
import type { WebhookReceiver } from '../notify/receiver.js';

const PER_ORG = 10;
/** An organisation with no event for this long shows none (its list is dropped). */
const KEEP_MS = 30 * 24 * 60 * 60 * 1000;

/** One line of the tab's recent events; an organisation's list is kept most recent first. */
export interface TabEvent {
  at: string;
  text: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim().slice(0, 80) : undefined);

/** "Bill ACM-12 updated", "Vendor Acme Supplies created", "Payment failed": the record as people know it, no bank detail. */
function eventText(type: string, entity: Record<string, unknown>): string {
  const [kind = '', ...rest] = type.split('.');
  const verb = (rest.at(-1) ?? 'changed').replace(/-/g, ' ');
  const invoice = entity.invoice as { invoiceNumber?: unknown } | undefined;
  const name: Record<string, [string, string | undefined]> = {
    bill: ['Bill', str(invoice?.invoiceNumber)],
    invoice: ['Invoice', str(entity.invoiceNumber)],
    vendor: ['Vendor', str(entity.name)],
    payment: ['Payment', undefined],
    autopay: ['Automatic payment', undefined],
    spend: [rest[0] === 'reimbursement' ? 'Reimbursement' : 'Card transaction', undefined],
  };
  const [noun, label] = name[kind] ?? ['BILL record', undefined];
  return `${noun}${label ? ` ${label}` : ''} ${verb}`;
}

/** The receiver, noting each event it accepts (a duplicate or a refusal is not one). */
export function notingEvents(
  receiver: Pick<WebhookReceiver, 'accept'>,
  state: Pick<StateStore, 'prepend'>,
  clock: Clock,
  log: Logger,
): Pick<WebhookReceiver, 'accept'> {
  return {
    accept: async (raw, signature) => {
      const answer = await receiver.accept(raw, signature);
      if (answer.status !== 200 || answer.body.status !== 'accepted') return answer;
      const parsed = parseNotification(raw);
      if (!parsed.ok) return answer;
      const { organizationId, eventType } = parsed.notification.metadata;
      const event: TabEvent = { at: new Date(clock.now()).toISOString(), text: eventText(eventType, parsed.notification.entity) };
      // The event is accepted (in the outbox) whatever happens here: a line missing from the tab is not worth a retry by BILL.
      await state.prepend(NS.tabEvents, organizationId, event, PER_ORG, { ttlMs: KEEP_MS }).catch((err: unknown) => {
        log.warn({ eventType, errName: errorName(err) }, 'recent event not kept for the dashboard tab');
      });
      return answer;
    },
  };
}
