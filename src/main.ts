import { fileURLToPath } from 'node:url';
import { openEventRelay } from '../native/binding.ts';
import { AppHost } from './apps/app-host.ts';
import { appHostOptionsFrom } from './apps/app-host-config.ts';
import { appsElsewhereRoutes } from './apps/apps-elsewhere-routes.ts';
import { type Config, ConfigError } from './config/config.ts';
import { DEFAULT_SLOTS } from './engine/compute-placement.ts';
import { LocalEngine, type LocalEngineOptions } from './engine/local-engine.ts';
import { ModelRegistry, type RegisteredModel } from './engine/model-registry.ts';
import type { GpuOffloadChoice } from './engine/gpu-offload.ts';
import { resolveModelSource } from './engine/model-source.ts';
import { defaultPromptCacheMiB } from './engine/prompt-cache-size.ts';
import { setUnmappedErrorReporter } from './errors/index.ts';
import { AccountService } from './accounts/account-service.ts';
import { ManagementAuthenticator } from './accounts/authenticator.ts';
import { openLimits } from './limits/limits.ts';
import { WorkspaceService } from './workspaces/workspace-service.ts';
import { KeyService } from './accounts/key-service.ts';
import { ProjectGateway } from './workspaces/project-gateway.ts';
import { Provisioner } from './workspaces/provisioner.ts';
import { ServingStats } from './inference/serving-stats.ts';
import { SharedModelGateway } from './inference/shared-model-gateway.ts';
import { startHttpServer } from './http/http-server.ts';
import { sessionErrorHeaders } from './accounts/session-cookie.ts';
import { appProxyRoutes } from './apps/app-proxy-routes.ts';
import { appRoutes } from './apps/app-routes.ts';
import { dashboardRoutes } from './dashboard/dashboard-routes.ts';
import { workspaceRoutes } from './workspaces/workspace-routes.ts';
import { accountRoutes } from './accounts/account-routes.ts';
import { statsRoutes } from './inference/stats-routes.ts';
import { modelAdminRoutes } from './inference/model-admin-routes.ts';
import { AddedModelsFile } from './inference/added-models-file.ts';
import { opsRoutes } from './ops/ops-routes.ts';
import { projectInferenceRoutes } from './workspaces/project-inference-routes.ts';
import { sessionRoutes } from './accounts/session-routes.ts';
import { sharedInferenceRoutes } from './inference/shared-inference-routes.ts';
import { ResponseRepository } from './inference/response-repository.ts';
import { directEndpoints } from './inference/direct-answer.ts';
import { batchDashboardRoutes, batchRoutes } from './batch/batch-routes.ts';
import { BatchRunner } from './batch/batch-runner.ts';
import { keyOwnerCheck } from './batch/batch-owner.ts';
import { openBatchStore } from './batch/open-batch-store.ts';
import { loadDashboardBundle } from './dashboard/static-assets.ts';
import { Disposables } from './lifecycle/disposables.ts';
import { waitFor } from './lifecycle/wait-for.ts';
import { createLogger, type Logger } from './log/logger.ts';
import { createMetrics } from './metrics/metrics.ts';
import { createProviders } from './providers/index.ts';
import { ApiKeyRepository } from './accounts/api-key-repository.ts';
import { AppRepository } from './apps/app-repository.ts';
import { openRecordStore } from './store/open-record-store.ts';
import type { RecordStore } from './store/record-store.ts';
import { loadMasterKey } from './store/master-key.ts';
import { ProjectRepository } from './workspaces/project-repository.ts';
import { ProviderKeyCipher } from './workspaces/provider-key-cipher.ts';
import { SessionRepository } from './accounts/session-repository.ts';
import { SETUP_TOKEN_TTL_MS, UserRepository } from './accounts/user-repository.ts';
import { WorkspaceRepository } from './workspaces/workspace-repository.ts';

export interface RunningHearth {
  port: number;
  /** Every model served (model-registry.ts). */
  models: ModelRegistry;
  store: RecordStore;
  /** Resolves once the default model is loaded in every worker, has failed, or was abandoned by close() (never rejects). */
  modelSettled: Promise<void>;
  /**
   * Every resource the process holds, closed in reverse order of registration by close(). A later part
   * (the app host, ...) registers here right after it starts: `hearth.disposables.add('apps', () => host.stop())`.
   */
  disposables: Disposables;
  /**
   * Graceful shutdown, in any model state (pulling, loading, ready, failed): stop accepting; let requests
   * in flight (generations, upstream calls) finish for up to `config.shutdownGraceMs`; then close every
   * connection still open (cutting what still runs) and dispose every resource, the pull and the model
   * workers included. Idempotent; never rejects.
   */
  close(): Promise<ShutdownOutcome>;
}

/** How a shutdown went; the CLI turns it into the exit code. */
export interface ShutdownOutcome {
  /** Every request finished within the grace period and every resource closed. */
  clean: boolean;
  /** Requests still running when the grace period ran out (they were cut). */
  cutRequests: number;
  /** Names of the resources that failed to close (details in the log). */
  failed: string[];
}

/**
 * Composition root: config -> master key -> providers -> store -> metrics -> engine -> gateway -> http. The HTTP server listens at
 * once; the model is pulled and loaded in the background (chat calls answer model_warming_up meanwhile).
 */
export async function startHearth(config: Config, log: Logger = createLogger(config.logLevel)): Promise<RunningHearth> {
  setUnmappedErrorReporter((err) => log.error('unmapped error', { error: err instanceof Error ? err : String(err) }));
  const masterKey = loadMasterKey({ secretKey: config.secretKey, dataDir: config.dataDir }); // a bad key file fails the boot here
  if (masterKey.source === 'created') log.info('created the master key file', { file: masterKey.file });
  const providers = createProviders(config); // a bad provider option fails the boot here, before anything is opened
  const configured = modelsFrom(config); // and so do two models of one id
  const primaryId = configured[0]!.source.modelId;
  const disposables = new Disposables();
  const metrics = createMetrics();
  const storeLog = log.child({ component: 'store' });
  const opened = await openRecordStore({
    dataDir: config.dataDir,
    databaseUrl: config.databaseUrl,
    log: (level, message, fields) => storeLog[level](message, fields),
    onHealth: (h) => metrics.storeUp.set(h.up ? 1 : 0),
  });
  const store = opened.store;
  metrics.storeUp.set(opened.health().up ? 1 : 0);
  if (config.databaseUrl !== undefined && masterKey.source !== 'setting')
    log.warn(
      'records are in PostgreSQL but the master key comes from a file in the data dir: every replica must use the same key (set HEARTH_SECRET_KEY)',
    );
  disposables.add('store', () => store.close());
  const limits = openLimits(config.databaseUrl, log.child({ component: 'limits' }));
  disposables.add('limits', () => limits.close()); // closed before the store: this replica's leases given back
  const keys = new ApiKeyRepository(store);
  const workspaces = new WorkspaceRepository(store);
  const cipher = new ProviderKeyCipher(masterKey.key);
  const projects = new ProjectRepository(store, cipher);
  const users = new UserRepository(store);
  const sessions = new SessionRepository(store, { idleMs: config.sessionIdleMs, maxAgeMs: config.sessionMaxAgeMs });
  const responses = new ResponseRepository(store, config.responsesTtlDays);
  const sweepResponses = () =>
    void responses.sweep().catch((err: unknown) => log.warn('stored responses sweep failed', { error: String(err) }));
  sweepResponses();
  const responseSweep = setInterval(sweepResponses, 3_600_000).unref();
  disposables.add('responses sweep', () => clearInterval(responseSweep));
  const cpuMachineMemo = new Map<string, GpuOffloadChoice>(); // a machine without a GPU is probed once, not per model load
  const engineOptions = (id: string, model: RegisteredModel): LocalEngineOptions => ({
    source: model.source,
    modelsDir: config.modelsDir,
    engine: config.engine,
    workers: config.workers,
    slots: model.slots ?? config.slots,
    threads: config.threads,
    cores: config.defaultCores,
    contextSize: model.contextSize ?? config.contextSize,
    batchSize: config.batchSize,
    cpuKernels: config.cpuKernels,
    gpuLayers: model.gpuLayers ?? config.gpuLayers,
    gpuBackend: config.gpuBackend,
    cpuMachineMemo,
    native: {
      weightRepack: config.weightRepack,
      persistentThreads: config.persistentThreads,
      threadPoll: config.threadPoll,
      stepTokenBudget: config.stepTokenBudget,
      promptCacheMiB: config.promptCacheMiB ?? defaultPromptCacheMiB(config.workers),
      prefillStepPercent: config.prefillStepPercent,
      promptRideTokens: config.promptRideTokens,
      kvUnified: config.kvUnified,
    },
    maxTokens: config.maxTokens,
    queueLimit: config.queueLimit,
    showPullProgress: process.stderr.isTTY === true && id === primaryId,
    pullStallTimeoutMs: config.pullStallTimeoutMs,
    openRelay: openEventRelay,
  });
  const models = new ModelRegistry(
    {
      loadWaitMs: config.loadWaitMs,
      maxLoaded: config.maxLoadedModels,
      memoryBudgetBytes: config.modelMemoryMiB * (1 << 20),
      idleUnloadMs: config.idleUnloadS * 1000,
      workers: config.workers,
      slots: config.slots ?? DEFAULT_SLOTS,
      contextSize: config.contextSize,
      modelsDir: config.modelsDir,
    },
    (id, model) => new LocalEngine(engineOptions(id, model), metrics, log),
    metrics,
    log,
  );
  for (const m of configured) models.add(m);
  const added = new AddedModelsFile(config.modelsDir, log);
  added.restore(models); // the models owners added through the API, served again
  // The default model starts pulling and loading at once (its state shows from the first /health); the others load on demand.
  const modelSettled = models.load(primaryId);
  disposables.add('models', () => models.dispose());
  const stats = new ServingStats(models.face(primaryId));
  const gateway = new SharedModelGateway(models, stats, { promptCacheScope: config.promptCacheScope });
  const batches = await openBatchStore(config.dataDir, config.databaseUrl, log.child({ component: 'batch' }));
  disposables.add('batch store', () => batches.close());
  const batchRunner = new BatchRunner(
    batches,
    directEndpoints({ gateway, responses }),
    log.child({ component: 'batch' }),
    { concurrency: config.batchConcurrency, lineLimit: config.bodyLimit, ttlDays: config.batchTtlDays },
    keyOwnerCheck(keys),
  );
  disposables.add('batch runner', () => batchRunner.stop()); // before the models: its lines are given back, not cut mid-way
  const sweepBatches = () =>
    void batches
      .sweep(Math.floor(Date.now() / 1000))
      .catch((err: unknown) => log.warn('batch sweep failed', { error: String(err) }));
  sweepBatches();
  const batchSweep = setInterval(sweepBatches, 3_600_000).unref();
  disposables.add('batch sweep', () => clearInterval(batchSweep));
  const accounts = new AccountService({
    users,
    sessions,
    signIns: limits.signIns,
    current: store.current?.bind(store),
  });
  const auth = new ManagementAuthenticator(keys, sessions, users, store.current?.bind(store));
  const session = {
    publicUrl: config.publicUrl?.replace(/\/+$/, ''),
    trustProxy: config.trustProxy,
    maxAgeMs: config.sessionMaxAgeMs,
  };
  let baseUrl = config.publicUrl ?? '';
  let apiPort: number | null = null; // the public port, once listening (apps reach it at HEARTH_API_URL)
  // --app-host false (a fleet replica other than the app host): no app runs here, the app routes answer 503.
  const appHost = config.appHost
    ? new AppHost(
        {
          apps: new AppRepository(store, cipher),
          keys,
          workspaces,
          metrics,
          log: log.child({ component: 'apps' }),
          baseUrl: () => baseUrl,
          apiPort: () => apiPort,
        },
        appHostOptionsFrom(config),
      )
    : undefined;
  const provisioner = new Provisioner(workspaces, projects, log, { delayMs: config.provisionDelayMs }, appHost ?? null);
  if (appHost) disposables.add('apps', () => appHost.dispose()); // closed after the provisioner (its Yam step uses the host), before the engine
  disposables.add('provisioner', () => provisioner.dispose());
  const workspaceService = new WorkspaceService({
    workspaces,
    projects,
    provisioner,
    baseUrl: () => baseUrl,
    ...(appHost ? { apps: appHost } : {}),
  });
  const authenticated = { auth, session, bodyLimit: config.bodyLimit };
  const projectGateway = new ProjectGateway({ projects, providers, metrics, log });
  const routes = [
    ...opsRoutes({ gateway, metrics, metricsToken: config.metricsToken, storeHealth: opened.health }),
    ...sharedInferenceRoutes({
      gateway,
      keys,
      responses,
      limiter: limits.keys,
      bodyLimit: config.bodyLimit,
      keepAliveMs: config.keepAliveMs,
      streamBufferLimit: config.streamBufferLimit,
    }),
    ...batchRoutes({
      store: batches,
      keys,
      limiter: limits.keys,
      fileLimitBytes: config.batchFileLimit,
      fileLineLimit: BATCH_FILE_LINE_LIMIT,
      ttlDays: config.batchTtlDays,
      bodyLimit: config.bodyLimit,
      nudge: () => batchRunner.nudge(),
    }),
    ...sessionRoutes({ accounts, session, bodyLimit: config.bodyLimit }),
    ...accountRoutes({ ...authenticated, keys: new KeyService(keys), accounts }),
    ...workspaceRoutes({ ...authenticated, workspaces: workspaceService }),
    ...statsRoutes({ ...authenticated, stats }),
    ...batchDashboardRoutes({ ...authenticated, store: batches }),
    ...modelAdminRoutes({
      ...authenticated,
      models,
      added,
      modelsDir: config.modelsDir,
      pullStallTimeoutMs: config.pullStallTimeoutMs,
    }),
    ...projectInferenceRoutes({
      projects: projectGateway,
      bodyLimit: config.bodyLimit,
      keepAliveMs: config.keepAliveMs,
      streamBufferLimit: config.streamBufferLimit,
    }),
    ...(appHost
      ? [
          ...appRoutes({ host: appHost, auth, session, bodyLimit: config.bodyLimit, keepAliveMs: config.keepAliveMs }),
          ...appProxyRoutes({
            host: appHost,
            bodyLimit: config.appProxyBodyLimit,
            headersTimeoutMs: config.appProxyTimeout * 1000,
            idleTimeoutMs: 300_000,
            proto: config.publicUrl?.startsWith('https:') ? 'https' : 'http',
            trustProxy: config.trustProxy,
          }),
        ]
      : appsElsewhereRoutes()),
    ...dashboardRoutes({ bundle: loadDashboard(log) }),
  ];
  let server;
  try {
    server = await startHttpServer({
      host: config.host,
      port: config.port,
      routes,
      metrics,
      log,
      errorHeaders: sessionErrorHeaders(session),
      front: config.front,
      bodyLimit: Math.max(
        config.bodyLimit,
        config.appArchiveLimit,
        config.appProxyBodyLimit,
        config.batchFileLimit + (1 << 20),
      ),
    });
  } catch (err) {
    await disposables.disposeAll(log);
    throw err;
  }
  const http = server;
  disposables.add('http', () => http.closeConnections());
  baseUrl = (config.publicUrl ?? defaultBaseUrl(config.host, server.port)).replace(/\/+$/, '');
  apiPort = server.port;
  try {
    await appHost?.start(); // live apps start again
  } catch (err) {
    await disposables.disposeAll(log); // a start that fails after listening releases what it opened
    throw err;
  }
  const resumed = provisioner.resumePending();
  if (resumed.yams + resumed.projects > 0) log.info('resuming provisioning', resumed);
  log.info('listening', {
    host: config.host,
    port: server.port,
    front: server.front,
    model: primaryId,
    ...(configured.length > 1 ? { models: models.ids() } : {}),
    dataDir: config.dataDir,
    records: opened.location,
  });
  // A start that fails after listening releases what it opened (else the listening socket would keep the process alive).
  const setupToken = await users.issueSetupToken(SETUP_TOKEN_TTL_MS).catch(async (err: unknown) => {
    // null once a user exists
    await disposables.disposeAll(log);
    throw err;
  });
  if (setupToken !== null)
    log.info('first-run setup: open this link to create the first owner', {
      url: `${baseUrl}/setup?token=${setupToken}`,
      validHours: SETUP_TOKEN_TTL_MS / 3_600_000,
    });
  const sweepSessions = () =>
    void sessions
      .sweepExpired()
      .catch((err: unknown) =>
        log.warn('session sweep failed', { error: err instanceof Error ? err.message : String(err) }),
      );
  sweepSessions();
  const sessionSweep = setInterval(sweepSessions, 3_600_000).unref();
  disposables.add('session-sweep', () => clearInterval(sessionSweep));
  let closing: Promise<ShutdownOutcome> | null = null;
  const running: RunningHearth = {
    port: server.port,
    models,
    store,
    modelSettled,
    disposables,
    close: () => {
      closing ??= (async () => {
        const state = models.face(primaryId).status().state;
        http.close(); // no new connections; requests on open ones answer 503 shutting_down
        models.stopLoading(); // and no model is loaded any more
        provisioner.dispose();
        await batchRunner.stop(); // batch lines in flight are cut and given back (answered after the restart), not waited for
        log.info('draining', { state, requests: http.inFlight(), graceMs: config.shutdownGraceMs });
        const deadline = performance.now() + config.shutdownGraceMs;
        const engines = models.loadedEngines();
        await Promise.all([
          ...engines.map((e) => e.drain(config.shutdownGraceMs)),
          waitFor(() => http.inFlight() === 0, deadline),
        ]);
        const busy = engines.reduce((n, e) => n + e.load().running + e.load().waiting, 0);
        const cutRequests = Math.max(http.inFlight(), busy);
        if (cutRequests > 0)
          log.warn('grace period expired: cutting requests still running', {
            requests: cutRequests,
            graceMs: config.shutdownGraceMs,
          });
        const { failed } = await disposables.disposeAll(log);
        const outcome: ShutdownOutcome = { clean: cutRequests === 0 && failed.length === 0, cutRequests, failed };
        log.info('stopped', { ...outcome });
        return outcome;
      })();
      return closing;
    },
  };
  return running;
}

/** Most lines of a Batch API input file (contract "Batch API"). */
const BATCH_FILE_LINE_LIMIT = 50_000;

/** The configured models with their sources resolved; a ConfigError when two have one id. */
function modelsFrom(config: Config): RegisteredModel[] {
  const configured = config.models.map((m) => ({
    source: resolveModelSource(m.source, m.id),
    slots: m.slots,
    contextSize: m.contextSize,
    gpuLayers: m.gpuLayers,
  }));
  const ids = new Set<string>();
  for (const m of configured) {
    if (ids.has(m.source.modelId))
      throw new ConfigError(
        `two models have the id '${m.source.modelId}': give each its own (--model SOURCE,id=NS/NAME)`,
      );
    ids.add(m.source.modelId);
  }
  return configured;
}

/** `http://host:port`, with a wildcard bind address replaced by loopback and IPv6 literals bracketed. */
function defaultBaseUrl(host: string, port: number): string {
  const h = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${h.includes(':') ? `[${h}]` : h}:${port}`;
}

/** The built dashboard (web/dist, made by `npm run build:web` at install), read once; null with a warning when absent. */
function loadDashboard(log: Logger) {
  const dir = fileURLToPath(new URL('../web/dist', import.meta.url));
  const bundle = loadDashboardBundle(dir);
  if (bundle === null) log.warn('the dashboard is not built: / answers 503 until `npm run build:web` has run', { dir });
  return bundle;
}
