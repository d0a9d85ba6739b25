import type { SharedModelGateway } from '../inference/shared-model-gateway.ts';
import { unauthorized } from '../errors/index.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { timingSafeEqual, createHash } from 'node:crypto';
import { bearerToken, type Route } from '../http/router.ts';

export interface OpsRouteDeps {
  gateway: SharedModelGateway;
  metrics: Metrics;
  /** When set, /metrics requires `Authorization: Bearer <metricsToken>`. */
  metricsToken: string | undefined;
  /** Whether the records database answers: /health's `store` (src/store/store-health.ts's shape). */
  storeHealth?: () => { backend: string; up: boolean; error?: string | undefined; since?: string | undefined };
}

function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/** Public health (warming / ready / failed; the records store's state) and Prometheus metrics. */
export function opsRoutes(d: OpsRouteDeps): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/health',
      name: 'health',
      handler: (ex) => {
        const h = d.gateway.health();
        // The store's state is said, not voted: with PostgreSQL down, reads (and inference with a known key)
        // still answer from the mirror, so the status stays the model's.
        if (d.storeHealth) h.body.store = d.storeHealth();
        ex.sendJson(h.status, h.body, h.status === 503 && h.body.state !== 'failed' ? [['retry-after', '120']] : []);
      },
    },
    {
      method: 'GET',
      pattern: '/metrics',
      name: 'metrics',
      handler: async (ex) => {
        if (d.metricsToken !== undefined) {
          const presented = bearerToken(ex.authorization);
          if (presented === undefined || !sameSecret(presented, d.metricsToken)) throw unauthorized();
        }
        ex.onAbort(() => {});
        const text = await d.metrics.registry.metrics();
        ex.send(200, text, [['content-type', d.metrics.registry.contentType]]);
      },
    },
  ];
}
