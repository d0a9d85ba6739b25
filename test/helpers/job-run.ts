import type { SlotEngine, SlotJobHandle, SlotJobResult } from '../../src/worker/slot-engine.ts';
import { submitJob, type TestJob } from './generation-job.ts';

/** What one job's events said: its text and completion tokens as they arrived, then its result or its error. */
export interface JobRun {
  text: string;
  /** The sum of onText's token counts. */
  tokens: number;
  result?: SlotJobResult;
  /** From onError: "code: message". */
  error?: string;
}

/**
 * Submits `job` to `engine` (submitJob: what the job leaves out is generationJob's) and collects its events into
 * `run` (a fresh JobRun, maybe with fields of the caller's own): `done` resolves with it at the job's terminal event
 * and never rejects. `hooks.onText` sees the run after each text event, `hooks.onEnd` after the terminal event,
 * before `done` resolves. Callbacks arrive on the engine's thread of events (the test's own event loop).
 */
export function startJob<R extends JobRun>(
  engine: SlotEngine,
  job: TestJob,
  run: R,
  hooks: { onText?(run: R): void; onEnd?(run: R): void } = {},
): { done: Promise<R>; handle: SlotJobHandle } {
  let handle!: SlotJobHandle;
  const done = new Promise<R>((resolve) => {
    const end = () => {
      hooks.onEnd?.(run);
      resolve(run);
    };
    handle = submitJob(engine, job, {
      onText: (text, n) => {
        run.text += text;
        run.tokens += n;
        hooks.onText?.(run);
      },
      onDone: (result) => {
        run.result = result;
        end();
      },
      onError: (e) => {
        run.error = `${e.code}: ${e.message}`;
        end();
      },
    });
  });
  return { done, handle };
}
