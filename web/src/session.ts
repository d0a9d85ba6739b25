import { api } from './api.ts';
import type { SessionUser, WhoAmI } from './types.ts';

/** The signed-in user (GET /api/v1/session), or null when signed out or the session ended. */
export async function fetchSession(): Promise<SessionUser | null> {
  try {
    const r = await api<WhoAmI>('GET', '/api/v1/session', { allowUnauthorized: true });
    if (!r?.user) return null;
    return { id: r.user.id, email: r.user.email, role: r.role ?? r.user.role, accountId: r.accountId };
  } catch {
    return null;
  }
}

/** Whether this Hearth still has no user (GET /api/v1/setup); false when unknown. */
export async function setupRequired(): Promise<boolean> {
  try {
    return (
      (await api<{ setupRequired: boolean }>('GET', '/api/v1/setup', { allowUnauthorized: true })).setupRequired ===
      true
    );
  } catch {
    return false;
  }
}

export async function signIn(email: string, password: string): Promise<void> {
  await api('POST', '/api/v1/session', { body: { email, password }, allowUnauthorized: true });
}

export async function signOut(): Promise<void> {
  await api('DELETE', '/api/v1/session', { allowUnauthorized: true });
}
