export * from './chat-provider.ts';
export { createProvider } from './create-provider.ts';
export { clientAbortError, isAbortError } from './abort-error.ts';
