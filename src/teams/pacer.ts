// Starts authenticated turns at most `perTick` per turn of the event loop, in arrival order. Started all at once, a
// burst (a busy channel, Teams redelivering after an outage) keeps the one thread busy for seconds while BILL's answers
// sit unread and its three slots per organisation stay empty (bench, 1,000 commands at once: slots 71–74% used at 16
// per loop turn, 94–95% at 2). At ordinary rates nothing waits.

export function turnPacer(perTick = 2) {
  const waiting: Array<() => void> = [];
  let startedThisTick = 0;
  let scheduled = false;
  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      const batch = waiting.splice(0, perTick);
      startedThisTick = batch.length;
      for (const start of batch) start();
      if (waiting.length > 0 || startedThisTick > 0) schedule();
    });
  };
  return {
    next(): Promise<void> {
      if (waiting.length === 0 && startedThisTick < perTick) {
        startedThisTick++;
        schedule();
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        waiting.push(resolve);
        schedule();
      });
    },
  };
}
