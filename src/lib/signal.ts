// Owns the in-process signal: listeners told of something, each until it unsubscribes. The store
// tells of commits with it, the dispatchers of their outcomes.

/** Listeners told of something, each until it unsubscribes. */
export class Signal<T> {
  private readonly listeners = new Set<(value: T) => void>();
  /** Subscribes `fn`; returns the unsubscribe function. */
  on(fn: (value: T) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
  emit(value: T): void {
    for (const fn of this.listeners) fn(value);
  }
}
