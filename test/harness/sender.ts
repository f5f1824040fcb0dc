// A ChannelSender that records what it sent and answers each send with the next outcome queued (default: delivered);
// 'hang' is a send Teams never answers, as when the process dies during it.
import type { ChannelSender, SendOutcome } from '../../src/notify/types.js';

export class RecordingSender implements ChannelSender {
  readonly sent: string[] = [];
  next: Array<SendOutcome | 'hang'> = [];
  async send(_ref: unknown, message: { summary: string }): Promise<SendOutcome> {
    const outcome = this.next.shift() ?? { ok: true };
    if (outcome === 'hang') return new Promise<SendOutcome>(() => undefined);
    if (outcome.ok) this.sent.push(message.summary);
    return outcome;
  }
}
