// Owns what a commit that wrote events tells its listeners (`store.eventsCommitted`): the outbox
// (outbox.ts) says it, the events runtime (runtime.ts) wakes streams and the webhook dispatcher on
// it. Types only, importing nothing, so the store can carry the signal without knowing webhooks.

/** What a commit that wrote events wrote: how many webhook deliveries it queued. */
export interface EventsCommitted {
  deliveries: number;
}
