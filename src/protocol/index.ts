export * from './openai-types.ts';
export * from './chat-request.ts';
export * from './validate-chat-request.ts';
export * from './completion-builder.ts';
export * from './sse.ts';
export * from './ids.ts';
