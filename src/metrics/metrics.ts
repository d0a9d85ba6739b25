import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { BoundCounter, BoundHistogram } from './bound-metrics.ts';

/**
 * Every Prometheus metric of Hearth, declared once (contract.md "Metrics"). Histograms follow vLLM's
 * names with a hearth_ prefix. Labels come only from closed sets (route, status class, model id of the
 * served model, finish reason, provider, error code): never a key, token, workspace or project id.
 * Owned by the main thread; worker threads report through engine events, never touch this registry.
 */
const LATENCY_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60,
];
const ITL_BUCKETS = [
  0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5, 5,
];

export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics(options: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (options.defaultMetrics !== false) {
    collectDefaultMetrics({ register: registry, prefix: 'hearth_' });
    // prom-client's totals of the per-type active handle/request/resource gauges are gauges named *_total,
    // which `promtool check metrics` rejects; sum(hearth_nodejs_active_handles) etc. give the same numbers.
    for (const name of ['active_handles_total', 'active_requests_total', 'active_resources_total'])
      registry.removeSingleMetric(`hearth_nodejs_${name}`);
  }
  const reg = [registry];
  return {
    registry,
    timeToFirstToken: new Histogram({
      name: 'hearth_time_to_first_token_seconds',
      help: 'Time from request admission to the first generated token',
      labelNames: ['model'],
      buckets: LATENCY_BUCKETS,
      registers: reg,
    }),
    interTokenLatency: new Histogram({
      name: 'hearth_inter_token_latency_seconds',
      help: 'Time between consecutive output deliveries of one stream, spread over the tokens each delivers (tokens that came with the first one count 0)',
      labelNames: ['model'],
      buckets: ITL_BUCKETS,
      registers: reg,
    }),
    e2eLatency: new Histogram({
      name: 'hearth_e2e_request_latency_seconds',
      help: 'End-to-end latency of chat completion requests',
      labelNames: ['model'],
      buckets: LATENCY_BUCKETS,
      registers: reg,
    }),
    queueTime: new Histogram({
      name: 'hearth_request_queue_time_seconds',
      help: 'Time a request waited for a slot',
      labelNames: ['model'],
      buckets: LATENCY_BUCKETS,
      registers: reg,
    }),
    requestsRunning: new Gauge({
      name: 'hearth_num_requests_running',
      help: 'Requests holding a slot, by priority (interactive, batch)',
      labelNames: ['model', 'priority'],
      registers: reg,
    }),
    requestsWaiting: new Gauge({
      name: 'hearth_num_requests_waiting',
      help: 'Requests waiting for a slot, by priority (interactive, batch)',
      labelNames: ['model', 'priority'],
      registers: reg,
    }),
    generatedTokensByPriority: new Counter({
      name: 'hearth_generated_tokens_total',
      help: 'Tokens generated, by priority (interactive, batch)',
      labelNames: ['model', 'priority'],
      registers: reg,
    }),
    preemptions: new Counter({
      name: 'hearth_preemptions_total',
      help: 'Native engine: batch generations that yielded their slot to waiting interactive work (each resumed later)',
      labelNames: ['model'],
      registers: reg,
    }),
    gpuLayers: new Gauge({
      name: 'hearth_model_gpu_layers',
      help: 'Model layers the workers offloaded to a GPU (0: computing on the CPU)',
      labelNames: ['model'],
      registers: reg,
    }),
    modelState: new Gauge({
      name: 'hearth_model_state',
      help: 'Model state (unloaded, pulling, loading, ready, failed): 1 for the current state label',
      labelNames: ['model', 'state'],
      registers: reg,
    }),
    modelLoads: new Counter({
      name: 'hearth_model_loads_total',
      help: 'Model loads started (at start, on demand, or by an owner)',
      labelNames: ['model'],
      registers: reg,
    }),
    modelUnloads: new Counter({
      name: 'hearth_model_unloads_total',
      help: 'Model unloads by reason (idle, max_loaded, memory, failed, request, removed)',
      labelNames: ['model', 'reason'],
      registers: reg,
    }),
    modelMemory: new Gauge({
      name: 'hearth_model_memory_bytes',
      help: 'Estimated memory of a loaded model (weights + KV cache; 0 when unloaded)',
      labelNames: ['model'],
      registers: reg,
    }),
    modelPullProgress: new Gauge({
      name: 'hearth_model_pull_progress_ratio',
      help: 'Fraction of the model file pulled (1 once present)',
      labelNames: ['model'],
      registers: reg,
    }),
    promptTokens: new Counter({
      name: 'hearth_prompt_tokens_total',
      help: 'Prompt tokens processed (cached ones included)',
      labelNames: ['model'],
      registers: reg,
    }),
    generationTokens: new Counter({
      name: 'hearth_generation_tokens_total',
      help: 'Tokens generated',
      labelNames: ['model'],
      registers: reg,
    }),
    requestSuccess: new Counter({
      name: 'hearth_request_success_total',
      help: 'Finished generations by finish reason',
      labelNames: ['model', 'finished_reason'],
      registers: reg,
    }),
    prefixCacheQueries: new Counter({
      name: 'hearth_prefix_cache_queries_total',
      help: 'Prompt tokens looked up in the prefix cache',
      labelNames: ['model'],
      registers: reg,
    }),
    promptCacheBytes: new Gauge({
      name: 'hearth_prompt_cache_bytes',
      help: 'Native engine: KV state bytes held in the host-memory prompt cache, all workers',
      labelNames: ['model'],
      registers: reg,
    }),
    promptCacheEntries: new Gauge({
      name: 'hearth_prompt_cache_entries',
      help: 'Native engine: entries (saved sequences) in the host-memory prompt cache, all workers',
      labelNames: ['model'],
      registers: reg,
    }),
    promptCacheCapacity: new Gauge({
      name: 'hearth_prompt_cache_capacity_bytes',
      help: 'Native engine: the most the host-memory prompt cache may hold, all workers (--prompt-cache-mib x workers)',
      labelNames: ['model'],
      registers: reg,
    }),
    promptCacheLookups: new Counter({
      name: 'hearth_prompt_cache_lookups_total',
      help: 'Native engine: jobs that looked in the host-memory prompt cache',
      labelNames: ['model'],
      registers: reg,
    }),
    promptCacheHits: new Counter({
      name: 'hearth_prompt_cache_hits_total',
      help: 'Native engine: jobs that started from a host-memory prompt cache entry (hit ratio: hits / lookups)',
      labelNames: ['model'],
      registers: reg,
    }),
    kvCacheUsage: new Gauge({
      name: 'hearth_kv_cache_usage_ratio',
      help: "Native engine: fraction of the KV cache's cells held by the requests running now (0..1; all workers); a finished request's reusable prefix counts as free",
      labelNames: ['model'],
      registers: reg,
    }),
    prefixCacheHits: new Counter({
      name: 'hearth_prefix_cache_hits_total',
      help: 'Prompt tokens served from the prefix cache',
      labelNames: ['model'],
      registers: reg,
    }),
    // Updated on every request: bound series (bound-metrics.ts), not prom-client's per-call label hashing.
    httpRequests: new BoundCounter({
      name: 'hearth_http_requests_total',
      help: 'HTTP requests by route and status',
      labelNames: ['route', 'status'],
      registers: reg,
    }),
    httpDuration: new BoundHistogram({
      name: 'hearth_http_request_duration_seconds',
      help: 'HTTP request duration by route and status class',
      labelNames: ['route', 'status_class'],
      buckets: LATENCY_BUCKETS,
      registers: reg,
    }),
    errors: new BoundCounter({
      name: 'hearth_errors_total',
      help: 'Error answers by code',
      labelNames: ['route', 'code'],
      registers: reg,
    }),
    providerLatency: new Histogram({
      name: 'hearth_provider_request_duration_seconds',
      help: 'Upstream provider call duration (to last byte)',
      labelNames: ['provider', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers: reg,
    }),
    appDeployments: new Counter({
      name: 'hearth_app_deployments_total',
      help: 'Finished app deployments by result (live, failed)',
      labelNames: ['result'],
      registers: reg,
    }),
    appRestarts: new Counter({
      name: 'hearth_app_restarts_total',
      help: 'App processes restarted after a crash',
      registers: reg,
    }),
    apps: new Gauge({
      name: 'hearth_apps',
      help: 'Apps by state (created, starting, running, crashed, stopped)',
      labelNames: ['state'],
      registers: reg,
    }),
    storeUp: new Gauge({
      name: 'hearth_store_up',
      help: 'Whether the records database answers (1; LMDB always), 0 while PostgreSQL is unreachable (writes answer store_unavailable)',
      registers: reg,
    }),
    providerErrors: new Counter({
      name: 'hearth_provider_errors_total',
      help: 'Upstream provider failures by kind',
      labelNames: ['provider', 'kind'],
      registers: reg,
    }),
  };
}
