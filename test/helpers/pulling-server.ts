import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type FakeModelHub, startFakeModelHub } from '../fakes/fake-model-hub.ts';
import { type HearthProcess, startHearthProcess } from './hearth-process.ts';
import { tinyChatModel } from './test-model.ts';

/** The tiny chat model's address on the fake hub (which serves its one file under any user, repo and name). */
export const TINY_CHAT_ON_HUB = 'hf:someone/tiny-chat-GGUF/tiny-chat.gguf';

export interface PullingServer {
  hearth: HearthProcess;
  /** Holds the second half of the download until `release()`. */
  hub: FakeModelHub;
  /** The server's fresh `--models-dir`. */
  modelsDir: string;
}

/**
 * `hearth serve` whose shared model (TINY_CHAT_ON_HUB) it pulls into a fresh `--models-dir` from a fake hub that
 * holds the download at half: the server stays warming up until `hub.release()`. `args` follow the model's; not
 * waited for ready. The caller stops the server and releases and closes the hub (closed here if the start fails).
 */
export async function startPullingServer(args: string[] = []): Promise<PullingServer> {
  const file = await tinyChatModel();
  const hub = await startFakeModelHub({ filePath: file, heldAfterBytes: Math.floor(fs.statSync(file).size / 2) });
  const modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-models-'));
  try {
    const hearth = await startHearthProcess({
      args: ['--model', TINY_CHAT_ON_HUB, '--models-dir', modelsDir, ...args],
      env: { HF_ENDPOINT: hub.endpoint },
    });
    return { hearth, hub, modelsDir };
  } catch (e) {
    hub.release();
    await hub.close();
    throw e;
  }
}
