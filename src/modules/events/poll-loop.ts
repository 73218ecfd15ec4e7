// Owns the shape shared by the stream poller and the webhook dispatcher: run a step now and then,
// at once when woken (a commit here or, through Redis, on another instance), never two at a time,
// and stop cleanly (waiting for a step in progress) when the app closes.
export class PollLoop {
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<void> | null = null;
  private again = false;
  private stopped = true;

  /**
   * `step` returns how soon it wants to run again (ms), or undefined for the default interval;
   * a wake-up always runs it sooner.
   */
  constructor(
    private readonly step: () => Promise<number | undefined>,
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  get running(): boolean {
    return !this.stopped;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  wake(): void {
    if (this.stopped) return;
    if (this.current) this.again = true;
    else this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.current;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    // Unref'd: a loop alone never keeps the process alive; the server and streams do.
    this.timer = setTimeout(() => this.tick(), ms);
    this.timer.unref();
  }

  private tick(): void {
    this.timer = null;
    if (this.stopped || this.current) return;
    this.current = (async () => {
      let delay = this.intervalMs;
      try {
        const wanted = await this.step();
        if (wanted !== undefined) delay = Math.min(delay, Math.max(0, wanted));
      } catch (err) {
        if (!this.stopped) this.onError(err);
      }
      this.current = null;
      if (this.again) {
        this.again = false;
        delay = 0;
      }
      this.schedule(delay);
    })();
  }
}
