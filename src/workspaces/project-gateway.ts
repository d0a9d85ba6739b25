import {
  type ApiError,
  projectNotReady,
  providerConfigurationMissing,
  toApiError,
  unauthorized,
} from '../errors/index.ts';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { ChatRequest } from '../protocol/chat-request.ts';
import type { ChatDelta } from '../protocol/chat-delta.ts';
import { type ChatProvider, isAbortError, isProviderName, type ProviderName } from '../providers/index.ts';
import type { ProjectRepository } from './project-repository.ts';
import type { ProjectRecord } from '../store/records.ts';
import { whenReady } from '../accounts/fresh-credentials.ts';
import { REVOCATION_CHECK_MS } from '../inference/key-admission.ts';

/**
 * Routes per-project chat requests to the project's upstream provider. `open()` decides, in this order
 * and before anything is sent upstream:
 *   1. the bearer token is a live token of THIS project, else 401 Unauthorized. An unknown project id is
 *      also 401 (never 404), so a token holder cannot probe which project ids exist;
 *   2. the project is `ready`, else 503 project_not_ready (+ Retry-After);
 *   3. provider, model and the stored provider key are usable, else 500 provider_configuration_missing.
 * The session it returns calls the provider with the decrypted key, which never leaves this object.
 * Provider latency and failures are recorded with closed-set labels only (provider, outcome / kind).
 * Main thread; providers are shared and stateless.
 */
export interface ProjectGatewayDeps {
  projects: ProjectRepository;
  providers: Readonly<Record<ProviderName, ChatProvider>>;
  metrics: Metrics;
  log: Logger;
}

/** One authorized call's face: the project's provider, model and temperature, bound to its key. */
export interface ProjectSession {
  readonly projectId: string;
  readonly provider: ProviderName;
  readonly model: string;
  /**
   * The answer as ChatDeltas (see ChatProvider.chat; upstream streaming when `request.stream`). Throws an
   * ApiError, or an AbortError once `signal` aborted; stopping early cancels the upstream call.
   */
  chat(request: ChatRequest, signal: AbortSignal): AsyncIterable<ChatDelta>;
}

/** Closed set of `kind` labels of hearth_provider_errors_total. */
export type ProviderErrorKind = 'auth' | 'timeout' | 'rate_limited' | 'invalid_request' | 'interrupted' | 'upstream';

export function providerErrorKind(e: ApiError): ProviderErrorKind {
  if (e.code === '401' || e.code === '403') return 'auth';
  if (e.status === 504) return 'timeout';
  if (e.status === 429) return 'rate_limited';
  if (e.status === 400) return 'invalid_request';
  if (e.code === 'stream_interrupted') return 'interrupted';
  return 'upstream';
}

export class ProjectGateway {
  constructor(private readonly d: ProjectGatewayDeps) {}

  /**
   * Authenticates and checks the project (see the class comment for the order of failures). A token unknown here is
   * looked up once more after the records caught up (made on another replica a moment ago: fresh-credentials.ts).
   */
  open(projectId: string, bearer: string | undefined): ProjectSession | Promise<ProjectSession> {
    return whenReady(this.d.projects.authenticateFresh(bearer), (project) => {
      const session = this.sessionFor(projectId, project);
      return { ...session, chat: (request, signal) => this.whileOpen(projectId, bearer, signal, session, request) };
    });
  }

  /**
   * The session's call, ended with the project's refusal (401 for a token rotated away or a project deleted, 503
   * project_not_ready for one suspended) when that happens while it runs: checked every REVOCATION_CHECK_MS against
   * this replica's records, so the upstream call, and what it spends of the stored provider key, stops within
   * about a second.
   */
  private async *whileOpen(
    projectId: string,
    bearer: string | undefined,
    signal: AbortSignal,
    session: ProjectSession,
    request: ChatRequest,
  ): AsyncGenerator<ChatDelta> {
    const closed = new AbortController();
    const timer = setInterval(() => {
      try {
        this.sessionFor(projectId, this.d.projects.authenticate(bearer));
      } catch (err) {
        clearInterval(timer);
        closed.abort(err);
      }
    }, REVOCATION_CHECK_MS);
    timer.unref();
    try {
      for await (const delta of session.chat(request, AbortSignal.any([signal, closed.signal]))) yield delta;
    } catch (err) {
      if (!closed.signal.aborted || signal.aborted) throw err;
    } finally {
      clearInterval(timer);
    }
    if (closed.signal.aborted && !signal.aborted) throw closed.signal.reason;
  }

  private sessionFor(projectId: string, project: ProjectRecord): ProjectSession {
    if (project.id !== projectId) throw unauthorized();
    if (project.state !== 'ready') throw projectNotReady(project.state);
    if (!isProviderName(project.provider))
      throw providerConfigurationMissing(`the project's provider '${project.provider}' is not supported`);
    if (project.model === '')
      throw providerConfigurationMissing('the project has no model stored; set one with PATCH {"model": ...}');
    const apiKey = this.d.projects.providerKeyOf(project);
    if (apiKey === null)
      throw providerConfigurationMissing(
        'the stored provider API key cannot be read; set it again with PATCH {"providerApiKey": ...}',
      );

    const provider = this.d.providers[project.provider];
    const model = project.model;
    const defaultTemperature = project.temperature ?? undefined;
    const call = (request: ChatRequest, signal: AbortSignal) => ({
      request,
      model,
      apiKey,
      defaultTemperature,
      signal,
    });
    return {
      projectId,
      provider: provider.name,
      model,
      chat: (request, signal) => this.observe(projectId, provider.name, signal, provider.chat(call(request, signal))),
    };
  }

  private async *observe(
    projectId: string,
    provider: ProviderName,
    signal: AbortSignal,
    deltas: AsyncIterable<ChatDelta>,
  ): AsyncGenerator<ChatDelta> {
    const started = performance.now();
    let settled = false;
    try {
      for await (const delta of deltas) {
        if (delta.type === 'finish') {
          settled = true;
          this.record(provider, started, 'success');
        }
        yield delta;
      }
    } catch (err) {
      settled = true;
      this.failed(projectId, provider, started, signal, err);
      throw err;
    } finally {
      // The consumer stopped early (client gone, stream buffer overflow): the upstream call was cancelled.
      if (!settled) this.record(provider, started, 'aborted');
    }
  }

  private failed(projectId: string, provider: ProviderName, started: number, signal: AbortSignal, err: unknown): void {
    if (signal.aborted || isAbortError(err)) {
      this.record(provider, started, 'aborted');
      return;
    }
    const e = toApiError(err);
    const kind = providerErrorKind(e);
    this.record(provider, started, 'error');
    this.d.metrics.providerErrors.inc({ provider, kind });
    this.d.log.warn('provider call failed', { projectId, provider, kind, status: e.status, code: e.code });
  }

  private record(provider: ProviderName, started: number, outcome: 'success' | 'error' | 'aborted'): void {
    this.d.metrics.providerLatency.observe({ provider, outcome }, (performance.now() - started) / 1000);
  }
}
