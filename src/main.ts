import type { Config } from './config/config.ts';
import { LocalEngine } from './engine/local-engine.ts';
import { resolveModelSource } from './engine/model-source.ts';
import { setUnmappedErrorReporter } from './errors/index.ts';
import { SharedModelGateway } from './gateway/shared-model-gateway.ts';
import { startHttpServer } from './http/http-server.ts';
import { opsRoutes } from './http/routes/ops-routes.ts';
import { sharedInferenceRoutes } from './http/routes/shared-inference-routes.ts';
import { createLogger, type Logger } from './log/logger.ts';
import { createMetrics } from './metrics/metrics.ts';
import { ApiKeyRepository } from './store/api-key-repository.ts';
import { HearthStore } from './store/database.ts';

export interface RunningHearth {
  port: number;
  engine: LocalEngine;
  store: HearthStore;
  /** Resolves once the model is loaded in every worker, or has failed (never rejects). */
  modelSettled: Promise<void>;
  /** Graceful shutdown: stop listening, stop the workers, close the store. Idempotent. */
  close(): Promise<void>;
}

/**
 * Composition root: config -> store -> metrics -> engine -> gateway -> http. The HTTP server listens at
 * once; the model is pulled and loaded in the background (chat calls answer model_warming_up meanwhile).
 */
export async function startHearth(config: Config, log: Logger = createLogger(config.logLevel)): Promise<RunningHearth> {
  setUnmappedErrorReporter((err) => log.error('unmapped error', { error: err instanceof Error ? err : String(err) }));
  const store = HearthStore.open(config.dataDir);
  const keys = new ApiKeyRepository(store);
  const metrics = createMetrics();
  const source = resolveModelSource(config.model, config.modelId);
  const engine = new LocalEngine(
    {
      source,
      modelsDir: config.modelsDir,
      engine: config.engine,
      workers: config.workers,
      slots: config.slots,
      threads: config.threads,
      cores: config.defaultCores,
      contextSize: config.contextSize,
      batchSize: config.batchSize,
      maxTokens: config.maxTokens,
      queueLimit: config.queueLimit,
      showPullProgress: process.stderr.isTTY === true,
    },
    metrics,
    log,
  );
  const gateway = new SharedModelGateway(engine);
  const routes = [
    ...opsRoutes({ gateway, metrics, metricsToken: config.metricsToken }),
    ...sharedInferenceRoutes({ gateway, keys, bodyLimit: config.bodyLimit, keepAliveMs: config.keepAliveMs, streamBufferLimit: config.streamBufferLimit }),
  ];
  let server;
  try {
    server = await startHttpServer({ host: config.host, port: config.port, routes, metrics, log });
  } catch (err) {
    await store.close();
    throw err;
  }
  log.info('listening', { host: config.host, port: server.port, model: engine.modelId, dataDir: config.dataDir });
  const modelSettled = engine.start();
  let closing: Promise<void> | null = null;
  const running: RunningHearth = {
    port: server.port,
    engine,
    store,
    modelSettled,
    close: () => {
      closing ??= (async () => {
        server.close();
        await engine.dispose();
        await store.close();
        log.info('stopped');
      })();
      return closing;
    },
  };
  return running;
}
