import fs from 'node:fs';
import {
  authenticatedRoutes,
  presentedCredentials,
  type AuthenticatedRouteDeps,
} from '../accounts/authenticated-route.ts';
import type { Principal } from '../accounts/authenticator.ts';
import { whenReady } from '../accounts/fresh-credentials.ts';
import { ownerRequired } from '../errors/index.ts';
import type { ModelRegistry, RegistryModelView } from '../engine/model-registry.ts';
import { pullModel, pulledModelPath } from '../engine/model-source.ts';
import type { HttpExchange } from '../http/http-exchange.ts';
import type { Route } from '../http/router.ts';
import { SseWriter } from '../http/sse-writer.ts';
import { parseModelSourceInput } from './model-source-input.ts';
import type { AddedModelsFile } from './added-models-file.ts';
import type { ModelView } from './model-view-types.ts';

export interface ModelAdminRouteDeps extends AuthenticatedRouteDeps {
  models: ModelRegistry;
  /** Where the added models are kept across restarts. */
  added: AddedModelsFile;
  modelsDir: string;
  pullStallTimeoutMs: number;
}

/** How often `?follow=1` sends the model's view while it changes (a pull, a load). */
const FOLLOW_EVERY_MS = 250;

/**
 * The models admin API (docs/models.md): `GET /api/v1/models` and `GET /api/v1/models/{id}` (`?follow=1`: the
 * view as server-sent events until it settles) for any signed-in caller; `POST /api/v1/models` (pull a hub model
 * or add a GGUF from the models dir), `DELETE /api/v1/models/{id}`, `POST /api/v1/models/{id}/load` and `/unload`
 * for an owner's session only (403 owner_required otherwise). A model id holds a `/`: `{id}` is sent
 * percent-encoded (`local%2Fm`) or as two segments (`local/m`).
 */
export function modelAdminRoutes(d: ModelAdminRouteDeps): Route[] {
  const { route, ok, created } = authenticatedRoutes(d);
  const owner = (p: Principal) => {
    if (p.kind !== 'session' || p.role !== 'owner') throw ownerRequired('models');
  };
  const idOf = (params: string[]) => params.join('/');
  const add = route('POST', '/api/v1/models', 'models', true, (c) => {
    owner(c.principal);
    const model = parseModelSourceInput(c.body, d.modelsDir);
    d.models.add(model);
    const source = model.source;
    d.added.add({ id: source.modelId, source: source.kind === 'hub' ? source.uri : source.path });
    if (source.kind === 'hub') {
      d.models.pull(source.modelId, (onProgress, signal) =>
        pullModel(source, { modelsDir: d.modelsDir, onProgress, signal, stallTimeoutMs: d.pullStallTimeoutMs }).then(
          () => {},
        ),
      );
    }
    return created(modelView(d.models.view(source.modelId)));
  });
  const remove = (params: string[]) => async (c: { principal: Principal }) => {
    owner(c.principal);
    const id = idOf(params);
    const model = await d.models.remove(id);
    d.added.remove(id);
    // A hub model's pulled file goes with it; a local file is the operator's and stays.
    if (model.source.kind === 'hub') fs.rmSync(pulledModelPath(model.source, d.modelsDir), { force: true });
    return ok({ id, object: 'model', deleted: true });
  };
  const load = (params: string[]) => (c: { principal: Principal }) => {
    owner(c.principal);
    const id = idOf(params);
    void d.models.load(id);
    return ok(modelView(d.models.view(id)));
  };
  const unload = (params: string[]) => async (c: { principal: Principal }) => {
    owner(c.principal);
    const id = idOf(params);
    await d.models.unloadNow(id);
    return ok(modelView(d.models.view(id)));
  };
  const list = route('GET', '/api/v1/models', 'models', false, () =>
    ok({ object: 'list', data: d.models.views().map(modelView) }),
  );
  const routes: Route[] = [add, list];
  for (const pattern of ['/api/v1/models/:id', '/api/v1/models/:namespace/:name']) {
    routes.push(
      { method: 'GET', pattern, name: 'model', handler: (ex) => readModel(ex, d) },
      route('DELETE', pattern, 'model', false, (c) => remove(c.params)(c)),
      route('POST', `${pattern}/load`, 'model_load', false, (c) => load(c.params)(c)),
      route('POST', `${pattern}/unload`, 'model_unload', false, (c) => unload(c.params)(c)),
    );
  }
  return routes;
}

/** GET /api/v1/models/{id}: its view, or with `follow=1` its view as `data:` events, again while it changes, until it is ready, unloaded or failed (and not loading or pulling). */
function readModel(ex: HttpExchange, d: ModelAdminRouteDeps): void | Promise<void> {
  return whenReady(d.auth.authenticateFresh(presentedCredentials(ex, d.session)), () => answerModel(ex, d));
}

function answerModel(ex: HttpExchange, d: ModelAdminRouteDeps): void | Promise<void> {
  const id = ex.params.join('/');
  const first = modelView(d.models.view(id)); // 404 model_not_found before anything is sent
  if (new URLSearchParams(ex.query).get('follow') !== '1') {
    ex.sendJson(200, first);
    return;
  }
  const sse = new SseWriter(ex, () => ex.close());
  sse.startKeepAlive();
  let last = '';
  return new Promise<void>((resolve) => {
    const tick = () => {
      if (ex.closed || !d.models.has(id)) {
        clearInterval(timer);
        sse.end();
        resolve();
        return;
      }
      const view = modelView(d.models.view(id));
      const text = JSON.stringify(view);
      if (text !== last) sse.write(`data: ${text}\n\n`);
      last = text;
      if (view.state !== 'pulling' && view.state !== 'loading') {
        clearInterval(timer);
        sse.end();
        void sse.ended.then(resolve);
      }
    };
    const timer = setInterval(tick, FOLLOW_EVERY_MS);
    tick();
  });
}

/** A model as the admin API shows it (docs/models.md). */
export function modelView(v: RegistryModelView): ModelView {
  return {
    id: v.id,
    object: 'model',
    source: v.source.kind === 'hub' ? v.source.uri : v.source.path,
    state: v.state,
    error: v.error,
    pull: v.pull && {
      downloaded_bytes: v.pull.downloadedBytes,
      total_bytes: v.pull.totalBytes,
      percent: v.pull.percent,
    },
    memory_bytes: v.memoryBytes,
    context_length: v.status?.contextSize ?? null,
    slots: v.status ? v.status.workers * v.status.slots : null,
    engine: v.state === 'ready' ? (v.status?.engine ?? null) : null,
    requests: v.requests,
    usage: {
      requests: v.usage.requests,
      completion_tokens: v.usage.completionTokens,
      tokens_per_second: v.usage.tokensPerSecond,
    },
    last_used_at: v.lastUsedAt === null ? null : new Date(v.lastUsedAt).toISOString(),
    loads: v.loads,
  };
}
