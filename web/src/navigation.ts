import { useEffect, useState } from 'preact/hooks';

/** History-API navigation: one listener set, re-rendered on push and on back/forward. Browser main thread. */
const listeners = new Set<() => void>();

export function navigate(to: string, replace = false): void {
  if (to === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  for (const l of listeners) l();
}

addEventListener('popstate', () => {
  for (const l of listeners) l();
});

/** The current location; the component re-renders when it changes. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const l = () => setTick((t) => t + 1);
    listeners.add(l);
    return () => {
      listeners.delete(l);
    };
  }, []);
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

/** Same-origin links go through `navigate` (no full reload); modified clicks and downloads keep the browser's behaviour. */
export function onLinkClick(e: MouseEvent): void {
  const a = (e.target as HTMLElement).closest('a');
  if (
    !a ||
    a.target ||
    a.hasAttribute('download') ||
    a.origin !== location.origin ||
    e.defaultPrevented ||
    e.button !== 0
  )
    return;
  if (e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(a.pathname + a.search);
}
