import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

/** The dashboard's hooks: loading, polling, submitting and form fields. Main (browser) thread; state per component. */

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => Promise<void>;
}

/** Loads `load()` on mount and when `deps` change; `reload` refreshes in place (the old data stays meanwhile). */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const live = useRef(true);
  const reload = useCallback(async () => {
    setLoading(true);
    try {
      const d = await load();
      if (!live.current) return;
      setData(d);
      setError(null);
    } catch (err) {
      if (live.current) setError(err);
    } finally {
      if (live.current) setLoading(false);
    }
  }, deps);
  useEffect(() => {
    live.current = true;
    void reload();
    return () => {
      live.current = false;
    };
  }, [reload]);
  return { data, error, loading, reload };
}

/** Runs `fn` every `ms` while mounted (and not while the tab is hidden). */
export function useInterval(fn: () => void, ms: number): void {
  const saved = useRef(fn);
  saved.current = fn;
  useEffect(() => {
    const t = setInterval(() => {
      if (document.visibilityState !== 'hidden') saved.current();
    }, ms);
    return () => clearInterval(t);
  }, [ms]);
}

/** Tracks a submit: `busy` while it runs, `error` from the last failure (cleared on the next run). */
export function useAction(): {
  busy: boolean;
  error: unknown;
  run: (fn: () => Promise<void>) => Promise<void>;
  clear: () => void;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run, clear: () => setError(null) };
}

/**
 * useAction for calls that change what the page shows: `change(call)` runs the call, then `after` (a reload, the
 * parent's onChanged); a failed call skips `after` and leaves its error in `error`.
 */
export function useChangeAction(after: () => unknown): ReturnType<typeof useAction> & {
  change: (call: () => Promise<unknown>) => Promise<void>;
} {
  const action = useAction();
  const change = (call: () => Promise<unknown>) =>
    action.run(async () => {
      await call();
      await after();
    });
  return { ...action, change };
}

/**
 * A form's text fields (inputs, textareas): their values, `bind(name)` to spread on the control (value and
 * onInput), `set` for a value the page fills in itself (a value, or one made from the current one), and `reset` back
 * to the initial values (of the named fields, or of all).
 */
export function useFields<K extends string>(
  initial: Record<K, string>,
): {
  values: Record<K, string>;
  bind: (name: K) => { value: string; onInput: (e: Event) => void };
  set: (name: K, value: string | ((current: string) => string)) => void;
  reset: (names?: K[]) => void;
} {
  const [values, setValues] = useState(initial);
  const set = (name: K, value: string | ((current: string) => string)) =>
    setValues((v) => ({ ...v, [name]: typeof value === 'function' ? value(v[name]) : value }));
  const bind = (name: K) => ({
    value: values[name],
    onInput: (e: Event) => set(name, (e.currentTarget as HTMLInputElement).value),
  });
  const reset = (names: K[] = Object.keys(initial) as K[]) =>
    setValues((v) => ({ ...v, ...Object.fromEntries(names.map((n) => [n, initial[n]])) }));
  return { values, bind, set, reset };
}
