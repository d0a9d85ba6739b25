export * from './chat-provider.ts';
export { createProvider } from './create-provider.ts';
export { clientAbortError, isAbortError } from './abort-error.ts';
export { createProviders, type ProviderSetSettings } from './provider-set.ts';
