import { cloneElement, type ComponentChildren, type VNode } from 'preact';
import { useId, useState } from 'preact/hooks';
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

/** The longest name of a key, workspace, project or app (the API's MAX_NAME, src/http/body-fields.ts). */
const MAX_NAME = 200;

/** A form's name field for a new key, workspace, project or app: required, at most the API's MAX_NAME characters. */
export function NameField({
  label,
  placeholder,
  bind,
}: {
  label: string;
  placeholder?: string;
  bind: { value: string; onInput: (e: Event) => void };
}) {
  return (
    <Field label={label}>
      <input required maxLength={MAX_NAME} {...bind} placeholder={placeholder} />
    </Field>
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

/** The ConfirmButton that deletes the record `name`: "Delete {name}", then "Confirm deleting {name}". */
export function DeleteButton({ name, onConfirm }: { name: string; onConfirm: () => void | Promise<void> }) {
  return <ConfirmButton label={`Delete ${name}`} confirmLabel={`Confirm deleting ${name}`} onConfirm={onConfirm} />;
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
