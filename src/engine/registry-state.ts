/** A model's state as GET /models shows it (contract.md: `hearth.state`). Free of imports: the dashboard (web/) shares it, type-only. */
export type RegistryState = 'unloaded' | 'pulling' | 'loading' | 'ready' | 'failed';
