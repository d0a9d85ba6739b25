import type { StoreHealth } from '../store-health.ts';
import type { StoreLog } from './postgres-store-types.ts';

/**
 * Whether the records database answered the PostgreSQL store's last query (for /health and hearth_store_up), and
 * if not why and since when. Owned by one PostgresStore, main thread: the store calls up() after each answer and
 * down() after each failure; each change of state is logged once and reported to `onHealth`.
 */
export class StoreAvailability {
  state: StoreHealth = { backend: 'postgres', up: true };

  constructor(
    private readonly log: StoreLog,
    private readonly onHealth: ((health: StoreHealth) => void) | undefined,
    /** After the store closes, failures (its own connections ending) change nothing. */
    private readonly closed: () => boolean,
  ) {}

  down(err: unknown): void {
    if (this.closed()) return;
    const error = describe(err);
    if (this.state.up || this.state.error !== error) {
      const since = this.state.up ? new Date().toISOString() : this.state.since;
      this.state = { backend: 'postgres', up: false, error, since };
      if (since === this.state.since) this.log('error', 'the records database is unavailable', { error });
      this.onHealth?.(this.state);
    }
  }

  up(): void {
    if (this.state.up) return;
    this.state = { backend: 'postgres', up: true };
    this.log('info', 'the records database is reachable again');
    this.onHealth?.(this.state);
  }
}

/** A database failure in one line (the first of an AggregateError's, e.g. every address refused). */
export function describe(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) return describe(err.errors[0]);
  if (err instanceof Error) return err.message || err.constructor.name;
  return String(err);
}
