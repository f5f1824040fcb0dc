// Starts incoming authenticated turns a few at a time per turn of the event loop (the adapter checks the token first,
// so a request that will be refused never waits here). When many activities arrive at once (a busy
// channel, Teams redelivering after an outage), starting them all in one go keeps the one thread busy for seconds;
// meanwhile answers from BILL sit unread and BILL's three slots per organisation stay empty. Paced, each loop turn
// starts at most `perTick` turns and then reads what has arrived (BILL's answers among it), in arrival order.
// At ordinary rates nothing waits: a turn starts at once while its loop turn has room.
//
// Measured (npm run bench, saturation: 1,000 commands at once over open connections): unpaced, BILL's slots stayed
// nearly empty for the first 1–3 s while the burst was read; utilisation of the slots was 71–74% at 16 turns per
// loop turn, 87–89% at 4 and 94–95% at 2.

export class TurnPacer {
  private readonly waiting: Array<() => void> = [];
  /** Turns started since the loop last came round to the check phase. */
  private startedThisTick = 0;
  private scheduled = false;

  constructor(private readonly perTick = 2) {}

  /** Resolves when this turn may start. */
  next(): Promise<void> {
    if (this.waiting.length === 0 && this.startedThisTick < this.perTick) {
      this.startedThisTick++;
      this.schedule();
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  /** Turns waiting to start (metrics, tests). */
  get queued(): number {
    return this.waiting.length;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const batch = this.waiting.splice(0, this.perTick);
      this.startedThisTick = batch.length;
      for (const start of batch) start();
      if (this.waiting.length > 0 || this.startedThisTick > 0) this.schedule();
    });
  }
}
