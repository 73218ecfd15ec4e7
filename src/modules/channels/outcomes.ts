// Owns recording the outcomes of one dispatcher's sends, batched: while one batch's transaction
// runs, the next collects, so under a stream of texts the record, its status change and its event
// share one transaction (one commit, one webhooks read, one take of the events lock) with their
// neighbours' instead of one each. A text recorded `sent` with a provider id gets, in the same
// transaction, the provider's reports that arrived before it (src/modules/channels/statuses.ts).
import type { Store } from '../../db/store.js';
import type { Tx } from '../../db/types.js';
import type { Outbox } from '../events/outbox.js';
import { type FillFiles, type MessageRef, recordOutcome, type SendOutcome, withStatusEvents } from './delivery.js';
import { applyKeptStatuses } from './statuses.js';

interface Pending {
  outcome: SendOutcome;
  done: (err?: unknown) => void;
}

export class OutcomeRecorder {
  private readonly pending: Pending[] = [];
  /** Whether a batch is being recorded (the next one collects meanwhile). */
  private recording = false;

  constructor(
    private readonly db: Store,
    private readonly instance: string,
    /** Gives the batch's `message.updated` events their messages' files, one read per batch. */
    private readonly fill: FillFiles | null = null,
  ) {}

  /** Resolves once `outcome` is committed (or found moot: the lease was lost); rejects if it was not. */
  record(outcome: SendOutcome): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ outcome, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (this.recording) return;
      this.recording = true;
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) await this.recordBatch(this.pending.splice(0));
    this.recording = false;
  }

  private async recordBatch(batch: Pending[]): Promise<void> {
    try {
      await withStatusEvents(this.db, this.fill, (tx, outbox) => this.apply(tx, outbox, batch));
      for (const p of batch) p.done();
    } catch (err) {
      if (batch.length === 1) return batch[0]!.done(err);
      // One outcome that cannot be recorded must not take the others with it: each on its own.
      for (const p of batch) {
        try {
          await withStatusEvents(this.db, this.fill, (tx, outbox) => this.apply(tx, outbox, [p]));
          p.done();
        } catch (e) {
          p.done(e);
        }
      }
    }
  }

  private async apply(tx: Tx, outbox: Outbox, batch: Pending[]): Promise<void> {
    const sent: { ref: MessageRef; externalId: string }[] = [];
    for (const { outcome: o } of batch) {
      const held = await recordOutcome(tx, outbox, this.instance, o);
      const id = o.status?.change.status === 'sent' ? o.status.change.externalId : null;
      if (held && typeof id === 'string') sent.push({ ref: o.status!.ref, externalId: id });
    }
    if (sent.length > 0) await applyKeptStatuses(tx, outbox, sent);
  }
}
