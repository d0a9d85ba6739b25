import OpenAI from 'openai';
import { ensureTinyModel } from '../../models/test-model-path.ts';
import { type HearthProcess, modelArgs, type ServeSettings, startHearthProcess } from './hearth-process.ts';
import { tinyChatModel } from './test-model.ts';

export interface ServedModel {
  hearth: HearthProcess;
  /** The official SDK on the shared-model API (`/api/inference/v1`), with the process's key and no retries. */
  client: OpenAI;
}

/**
 * A real `hearth serve` on one local model (the tiny chat model unless `model` names another file), ready to
 * answer: `--model M --model-id ID` then `args`. The caller stops it (afterAll).
 */
export async function serveModel(
  modelId: string,
  args: readonly string[] = ['--slots', '2'],
  model?: string,
): Promise<ServedModel> {
  const hearth = await startHearthProcess({
    args: ['--model', model ?? (await tinyChatModel()), '--model-id', modelId, ...args],
  });
  await hearth.waitReady();
  return {
    hearth,
    client: new OpenAI({ apiKey: hearth.key, baseURL: `${hearth.baseUrl}/api/inference/v1`, maxRetries: 0 }),
  };
}

/**
 * A ready `hearth serve` on the tiny model that never stops on its own, as `modelId` with modelArgs' `settings`
 * (`engine: 'native'` for the native loop) and `env`. Only max_tokens, a cancel or a full context end a generation:
 * the model writes about 2,000 tokens in half a second here, so a stream that must hold its slot for a test's
 * length needs a long context: `trainedContext` (the model's own, to which `context-size` is capped; default 2048)
 * and `context-size` both. The caller stops it (afterAll).
 */
export async function serveNeverStopping(
  modelId: string,
  settings: ServeSettings,
  env: NodeJS.ProcessEnv = {},
  trainedContext = 2048,
): Promise<HearthProcess> {
  const hearth = await startHearthProcess({
    args: modelArgs(await ensureTinyModel({ reply: null, contextLength: trainedContext }), modelId, settings),
    env,
  });
  await hearth.waitReady();
  return hearth;
}
