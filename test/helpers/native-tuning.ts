import type { NativeTuning } from '../../native/generation-job.ts';

/** The native loop as the tests run it: the config's defaults, with no host prompt cache (each test asks for one). */
export const TEST_NATIVE_TUNING: NativeTuning = {
  weightRepack: true,
  persistentThreads: true,
  threadPoll: 0,
  stepTokenBudget: 0,
  promptCacheMiB: 0,
  prefillStepPercent: 0,
  promptRideTokens: 0,
  kvUnified: false,
};
