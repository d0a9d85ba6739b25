import type { Logger } from '../log/logger.ts';

/** A resource the process must release on shutdown. `dispose()` must be idempotent and must not wait on clients. */
export interface Disposable {
  /** Closed-set name for the log ("http", "engine", "store", "apps", ...). */
  readonly name: string;
  dispose(): void | Promise<void>;
}

/**
 * The process's resources, in the order they were opened; `disposeAll()` releases them in reverse order
 * (the HTTP edge before the engine, the engine before the store). Owner: main.ts, on the main thread.
 * A resource registers right after it is opened, so a failed start releases exactly what was opened.
 * A dispose that throws or rejects is logged and reported; the others still run.
 */
export class Disposables {
  private readonly items: Disposable[] = [];
  private disposing: Promise<{ failed: string[] }> | null = null;

  add(name: string, dispose: () => void | Promise<void>): void {
    if (this.disposing) throw new Error(`cannot register '${name}': shutdown has begun`);
    this.items.push({ name, dispose });
  }

  /** Idempotent; resolves with the names of the resources that failed to close. Never rejects. */
  disposeAll(log: Logger): Promise<{ failed: string[] }> {
    this.disposing ??= (async () => {
      const failed: string[] = [];
      for (const item of [...this.items].reverse()) {
        try {
          await item.dispose();
          log.debug('closed', { resource: item.name });
        } catch (err) {
          failed.push(item.name);
          log.error('could not close a resource', {
            resource: item.name,
            error: err instanceof Error ? err : String(err),
          });
        }
      }
      return { failed };
    })();
    return this.disposing;
  }
}
