// The last BILL webhook events of each organisation, for the dashboard tab: what the receiver accepted, in a line of
// words each ("Bill ACM-12 updated"), at most 10 an organisation, kept in this process (the outbox drops an event once
// delivered, and nothing else keeps one).
import { parseNotification } from '../bill/webhooks.js';
import type { WebhookReceiver } from '../notify/receiver.js';

const PER_ORG = 10;

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

export class RecentEvents {
  private readonly byOrg = new Map<string, TabEvent[]>();

  /** The organisation's last events, most recent first. */
  of(orgId: string): TabEvent[] {
    return [...(this.byOrg.get(orgId) ?? [])];
  }

  /** The receiver, noting each event it accepts (a duplicate or a refusal is not one). */
  noting(receiver: Pick<WebhookReceiver, 'accept'>, now: () => number): Pick<WebhookReceiver, 'accept'> {
    return {
      accept: async (raw, signature) => {
        const answer = await receiver.accept(raw, signature);
        if (answer.status === 200 && answer.body.status === 'accepted') {
          const parsed = parseNotification(raw);
          if (parsed.ok) {
            const { organizationId, eventType } = parsed.notification.metadata;
            const list = this.byOrg.get(organizationId) ?? [];
            list.unshift({ at: new Date(now()).toISOString(), text: eventText(eventType, parsed.notification.entity) });
            this.byOrg.set(organizationId, list.slice(0, PER_ORG));
          }
        }
        return answer;
      },
    };
  }
}
