// Starts authenticated turns at most `perTick` per turn of the event loop, in arrival order. Started all at once, a
// burst (a busy channel, Teams redelivering after an outage) keeps the one thread busy for seconds while BILL's answers
// sit unread and its three slots per organisation stay empty (bench, 1,000 commands at once: slots 71–74% used at 16
// per loop turn, 94–95% at 2). At ordinary rates nothing waits.

export class TurnPacer {
  private readonly waiting: Array<() => void> = [];
  private startedThisTick = 0;
  private scheduled = false;

  constructor(private readonly perTick = 2) {}

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
