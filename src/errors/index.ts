export * from './api-error.ts';
export * from './errors.ts';
export * from './to-api-error.ts';
export * from './engine-failure.ts';
export * from './anthropic-error-body.ts';
