/** Constructors for every error condition Hearth documents (README "Errors"), one file per kind of condition. */
export * from './request-errors.ts';
export * from './service-errors.ts';
export * from './workspace-errors.ts';
export * from './app-errors.ts';
export * from './account-errors.ts';
