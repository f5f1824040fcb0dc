// /readyz: the parts the bot needs, each with a check; ready only when all pass.
export type ReadinessCheck = () => boolean | Promise<boolean>;

export interface ReadinessReport {
  ready: boolean;
  parts: Record<string, boolean>;
}

export class Readiness {
  private readonly checks = new Map<string, ReadinessCheck>();

  add(name: string, check: ReadinessCheck): this {
    this.checks.set(name, check);
    return this;
  }

  async report(): Promise<ReadinessReport> {
    const parts: Record<string, boolean> = {};
    await Promise.all(
      [...this.checks].map(async ([name, check]) => {
        try {
          parts[name] = await Promise.race([
            Promise.resolve(check()),
            new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 2_000).unref()),
          ]);
        } catch {
          parts[name] = false;
        }
      }),
    );
    return { ready: Object.values(parts).every(Boolean), parts };
  }
}
