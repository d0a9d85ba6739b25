import { cloneElement, type ComponentChildren, type VNode } from 'preact';
import { useCallback, useEffect, useId, useRef, useState } from 'preact/hooks';
import { describeError } from '../api.ts';

/** An error as the API gave it (role alert), or nothing. */
export function ErrorNote({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  return (
    <p class="note error" role="alert">
      {describeError(error)}
    </p>
  );
}

/**
 * The end of a grid form: its submit button named `label` (disabled while `action` runs, or when `disabled`),
 * then the action's error across the whole grid.
 */
export function FormFooter({
  label,
  action,
  disabled,
}: {
  label: string;
  action: { busy: boolean; error: unknown };
  disabled?: boolean;
}) {
  return (
    <>
      <div class="form-actions">
        <button type="submit" disabled={disabled || action.busy}>
          {label}
        </button>
      </div>
      <div class="span-all">
        <ErrorNote error={action.error} />
      </div>
    </>
  );
}

export function Note({ children, tone = 'info' }: { children: ComponentChildren; tone?: 'info' | 'warn' | 'ok' }) {
  return (
    <p class={`note ${tone}`} role="status">
      {children}
    </p>
  );
}

/**
 * A labelled control: `<label for>` names the one child control (its accessible name is exactly `label`),
 * and the hint is tied to it with aria-describedby, so it describes without renaming.
 */
export function Field({
  label,
  hint,
  children,
}: {
  label: string;
  hint?: string;
  children: VNode<Record<string, unknown>>;
}) {
  const id = useId();
  const hintId = `${id}-hint`;
  return (
    <div class="field">
      <label class="field-label" for={id}>
        {label}
      </label>
      {cloneElement(children, { id, 'aria-describedby': hint ? hintId : undefined })}
      {hint && (
        <span class="field-hint" id={hintId}>
          {hint}
        </span>
      )}
    </div>
  );
}

export function StateBadge({ state }: { state: string }) {
  return <span class={`badge state-${state}`}>{state}</span>;
}

/** Copies `text` to the clipboard and says so for two seconds (or that the browser refused). */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [result, setResult] = useState<'copied' | 'refused' | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setResult('copied');
    } catch {
      setResult('refused'); // no clipboard access (plain http on another host): the text stays selectable
    }
    setTimeout(() => setResult(null), 2000);
  };
  return (
    <button type="button" class="secondary" aria-label={label} onClick={copy}>
      {result === 'copied' ? 'Copied' : result === 'refused' ? 'Select and copy' : 'Copy'}
    </button>
  );
}

/**
 * A secret shown once (API key, project token): read-only, with a copy button, and a Done button that
 * forgets it. The parent drops the value on Done; nothing keeps it beyond this component.
 */
export function SecretOnce({ label, value, onDone }: { label: string; value: string; onDone: () => void }) {
  return (
    <section class="secret" aria-label={label}>
      <p class="secret-title">
        <strong>{label}</strong> — shown once: copy it now, it cannot be shown again.
      </p>
      <div class="row">
        <input class="mono grow" readOnly value={value} aria-label={label} onFocus={(e) => e.currentTarget.select()} />
        <CopyButton text={value} label={`Copy ${label}`} />
        <button type="button" class="secondary" onClick={onDone}>
          Done
        </button>
      </div>
    </section>
  );
}

/** A destructive action asked twice: the first click shows "Confirm" and "Cancel" in place. */
export function ConfirmButton({
  label,
  confirmLabel,
  onConfirm,
  disabled,
}: {
  label: string;
  confirmLabel: string;
  onConfirm: () => void | Promise<void>;
  disabled?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking)
    return (
      <button type="button" class="danger-outline" disabled={disabled} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  return (
    <span class="row tight">
      <button
        type="button"
        class="danger"
        onClick={async () => {
          setAsking(false);
          await onConfirm();
        }}
      >
        {confirmLabel}
      </button>
      <button type="button" class="secondary" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

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

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime())
    ? iso
    : d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

/** `null`/blank -> null; otherwise a positive integer, or NaN for anything else. */
export function optionalPositiveInt(s: string): number | null {
  const t = s.trim();
  if (t === '') return null;
  return /^\d+$/.test(t) && Number(t) > 0 ? Number(t) : Number.NaN;
}
