/**
 * Reads the example tool server's settings from environment variables (README.md lists them).
 * Throws an Error naming the first missing or invalid one.
 */
import type { ExampleConfig } from './app.ts';

function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name]?.trim();
  if (!value) throw new Error(`${name} must be set`);
  return value;
}

function optionalInt(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  if (!/^\d+$/.test(raw)) throw new Error(`${name} must be a non-negative integer, got '${raw}'`);
  return Number(raw);
}

export function readExampleConfig(env: NodeJS.ProcessEnv): ExampleConfig {
  const baseUrl = required(env, 'HEARTH_BASE_URL');
  try {
    new URL(baseUrl);
  } catch {
    throw new Error(`HEARTH_BASE_URL must be an absolute URL, got '${baseUrl}'`);
  }
  const timeoutMs = optionalInt(env, 'HEARTH_TIMEOUT_MS');
  const maxRetries = optionalInt(env, 'HEARTH_MAX_RETRIES');
  const defaultModel = env.HEARTH_MODEL?.trim();
  return {
    // PORT itself is read by the kit.
    ...(env.HOST?.trim() ? { host: env.HOST.trim() } : {}),
    toolServerApiKey: required(env, 'TOOL_SERVER_API_KEY'),
    hearth: {
      baseUrl,
      apiKey: required(env, 'HEARTH_API_KEY'),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(maxRetries !== undefined ? { maxRetries } : {}),
    },
    ...(defaultModel ? { defaultModel } : {}),
  };
}
