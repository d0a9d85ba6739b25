/** How the dashboard reads and shows values: times, optional counts. Pure. */

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
