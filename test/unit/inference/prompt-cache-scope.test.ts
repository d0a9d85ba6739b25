import { describe, expect, it } from 'vitest';
import type { ChatEngine, GenerationRequest, ModelStatus } from '../../../src/engine/generation.ts';
import { cachePartitionOf, type PromptCacheScope } from '../../../src/inference/prompt-cache-scope.ts';
import { SharedModelGateway } from '../../../src/inference/shared-model-gateway.ts';
import { validateChatRequest } from '../../../src/protocol/validate-chat-request.ts';

/** A ChatEngine that records what the gateway asks of it and never answers. */
function recordingEngine(): { engine: ChatEngine; requests: GenerationRequest[] } {
  const requests: GenerationRequest[] = [];
  const engine: ChatEngine = {
    modelId: 'local/m',
    status: () => ({ state: 'ready' }) as ModelStatus,
    generate: (request) => {
      requests.push(request);
      return { cancel() {} };
    },
    load: () => ({ running: 0, waiting: 0 }),
    drain: async () => {},
    dispose: async () => {},
  };
  return { engine, requests };
}

const request = validateChatRequest({
  model: 'local/m',
  messages: [
    { role: 'system', content: 'secret' },
    { role: 'user', content: 'hi' },
  ],
});
const sink = { push() {}, fail() {} };
const callers = [
  { keyId: 'k1', accountId: 'acct-a', priority: 'interactive' as const },
  { keyId: 'k2', accountId: 'acct-a', priority: 'interactive' as const }, // another key of the same account (an app's key is one of these)
  { keyId: 'k3', accountId: 'acct-b', priority: 'interactive' as const },
];

async function partitions(scope: PromptCacheScope | undefined): Promise<string[]> {
  const { engine, requests } = recordingEngine();
  const gateway = new SharedModelGateway(engine, undefined, scope === undefined ? {} : { promptCacheScope: scope });
  const model = await gateway.acquire(engine.modelId);
  for (const caller of callers) gateway.startChat(model, request, sink, caller);
  model.release();
  return requests.map((r) => r.cachePartition);
}

describe('prompt-cache scope (issue #28)', () => {
  it('by default every generation carries its account as cache partition: keys of one account share it, accounts never do', async () => {
    const [a1, a2, b] = await partitions(undefined);
    expect(a1).toBe(a2);
    expect(a1).not.toBe(b);
    expect(a1).not.toBe('');
    expect(await partitions('account')).toEqual([a1, a2, b]);
  });

  it('key scope: one partition per key; global: the one shared partition', async () => {
    const [k1, k2, k3] = await partitions('key');
    expect(new Set([k1, k2, k3]).size).toBe(3);
    expect(await partitions('global')).toEqual(['', '', '']);
  });

  it('an account id never names the same partition as a key id, whatever the strings', () => {
    expect(cachePartitionOf('account', { keyId: 'x', accountId: 'x', priority: 'interactive' })).not.toBe(
      cachePartitionOf('key', { keyId: 'x', accountId: 'x', priority: 'interactive' }),
    );
  });
});
