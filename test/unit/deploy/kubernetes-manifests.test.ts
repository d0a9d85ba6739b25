import fs from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import ts from 'typescript';
import { ConfigMap, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { HTTPRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { SERVE_SETTINGS } from '../../../src/config/config-spec.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';

/**
 * deploy/kubernetes/ (docs/fleet.md "Kubernetes"), validated without a cluster:
 * - every document of every file against its kind's schema: the Kubernetes API's own (kubernetes-models 5.1,
 *   prometheus-operator's ServiceMonitor, Gateway API's HTTPRoute) and, for the InferencePool, the CRD's
 *   openAPIV3Schema from the Gateway API Inference Extension v1.6.0 (test/fixtures/kubernetes), with unknown fields
 *   refused and its two CEL rules checked by hand. The kubernetes-models validators check types, required fields,
 *   enums and formats but let unknown (misspelled) fields through: those are caught by TypeScript's excess-property
 *   check against the same packages' interfaces (unknownFields);
 * - the references between them (selectors, ports, names, secrets, metric names, Hearth's settings).
 * Not validated: admission (quotas, policies, defaulting), the controllers' behaviour, the EPP's flags (from its
 * v1.2.0 source, not run here), prometheus-adapter's rule beyond its shape.
 */
const DIR = path.resolve(import.meta.dirname, '../../../deploy/kubernetes');
const INFERENCE_POOL_SCHEMA = path.resolve(
  import.meta.dirname,
  '../../fixtures/kubernetes/inferencepool-v1.schema.json',
);

type Doc = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  [k: string]: unknown;
};
type Model = new (data: never) => { validate(): void };

/** The package holding an API group's types: kubernetes-models for the built-in groups, its own for each CRD. */
const TYPE_PACKAGES: Record<string, string> = {
  'monitoring.coreos.com/v1': '@kubernetes-models/prometheus-operator',
  'gateway.networking.k8s.io/v1': '@kubernetes-models/gateway-api',
};

/**
 * Each kind's model (its schema validator) by "apiVersion/kind" and, for the field-name check, the module and
 * interface of its type (`I` + kind, in the package of its API group).
 */
const MODELS: Record<string, { model: Model; types: [string, string] }> = Object.fromEntries(
  [
    ConfigMap,
    Secret,
    Service,
    ServiceAccount,
    Deployment,
    HorizontalPodAutoscaler,
    PodDisruptionBudget,
    Role,
    RoleBinding,
    ServiceMonitor,
    HTTPRoute,
  ].map((model) => [
    `${model.apiVersion}/${model.kind}`,
    {
      model,
      types: [`${TYPE_PACKAGES[model.apiVersion] ?? 'kubernetes-models'}/${model.apiVersion}`, `I${model.kind}`],
    },
  ]),
);

/**
 * Unknown (misspelled) fields in the built-in kinds, which their validators let through: each document becomes an
 * object literal typed by its kind's interface, and TypeScript's excess-property check names any field the type
 * lacks, at any depth. Returns the compiler's messages by document name.
 */
function unknownFields(docs: Array<{ name: string; doc: Doc }>): Map<string, string[]> {
  const file = path.join(import.meta.dirname, '__manifest-types.ts');
  const imports = new Map<string, Set<string>>();
  const lines: string[] = [];
  for (const [i, { doc }] of docs.entries()) {
    const [module, type] = MODELS[`${doc.apiVersion}/${doc.kind}`]!.types;
    if (!imports.has(module)) imports.set(module, new Set());
    imports.get(module)!.add(type);
    lines.push(`export const doc${i}: ${type} = ${JSON.stringify(doc)};`);
  }
  const source = [
    ...[...imports].map(([m, types]) => `import type { ${[...types].join(', ')} } from '${m}';`),
    ...lines,
  ].join('\n');
  const options: ts.CompilerOptions = {
    noEmit: true,
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
    skipLibCheck: true,
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.getSourceFile = (name, language, ...rest) =>
    name === file ? ts.createSourceFile(name, source, language) : getSourceFile(name, language, ...rest);
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  const out = new Map<string, string[]>();
  for (const d of ts.getPreEmitDiagnostics(program)) {
    if (d.file?.fileName !== file || d.start === undefined) continue;
    const line = d.file.getLineAndCharacterOfPosition(d.start).line - imports.size;
    const name = docs[line]?.name ?? `line ${line}`;
    out.set(name, [...(out.get(name) ?? []), ts.flattenDiagnosticMessageText(d.messageText, ' ')]);
  }
  return out;
}

/** The CRD schema with unknown fields refused (the API server's strict field validation). */
function strict(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strict);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema))
    out[k] =
      k === 'properties'
        ? Object.fromEntries(Object.entries(v as object).map(([p, s]) => [p, p === 'metadata' ? s : strict(s)]))
        : strict(v);
  if ('properties' in out && !('additionalProperties' in out)) out.additionalProperties = false;
  return out;
}

const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addFormat('date-time', { type: 'string', validate: (t: string) => !Number.isNaN(Date.parse(t)) });
ajv.addFormat('int32', {
  type: 'number',
  validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
});
ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
const inferencePoolSchema = strict(JSON.parse(fs.readFileSync(INFERENCE_POOL_SCHEMA, 'utf8')) as object) as object;
const validateInferencePool = ajv.compile(inferencePoolSchema);

/** Throws what is wrong with one document (its schema, and for the InferencePool its CEL rules). */
function validate(doc: Doc): void {
  const key = `${doc.apiVersion}/${doc.kind}`;
  if (key === 'inference.networking.k8s.io/v1/InferencePool') {
    if (!validateInferencePool(doc)) throw new Error(ajv.errorsText(validateInferencePool.errors));
    const spec = doc.spec as {
      endpointPickerRef?: { kind?: string; port?: unknown };
      targetPorts: Array<{ number: number }>;
    };
    // x-kubernetes-validations: "self.kind != 'Service' || has(self.port)" and unique target port numbers.
    if (
      spec.endpointPickerRef &&
      (spec.endpointPickerRef.kind ?? 'Service') === 'Service' &&
      spec.endpointPickerRef.port === undefined
    )
      throw new Error('endpointPickerRef: port is required when kind is Service');
    const ports = spec.targetPorts.map((p) => p.number);
    if (new Set(ports).size !== ports.length) throw new Error('targetPorts: port number must be unique');
    return;
  }
  const entry = MODELS[key];
  if (!entry) throw new Error(`no schema for ${key}`);
  new entry.model(doc as never).validate();
}

function load(): Map<string, Doc[]> {
  const files = new Map<string, Doc[]>();
  for (const file of fs
    .readdirSync(DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort()) {
    const docs = YAML.parseAllDocuments(fs.readFileSync(path.join(DIR, file), 'utf8'));
    for (const d of docs) if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]!.message}`);
    files.set(
      file,
      docs.map((d) => d.toJS() as Doc).filter((d) => d !== null),
    );
  }
  return files;
}

const files = load();
const all = [...files.values()].flat();
const find = <T = Doc>(kind: string, name: string): T => {
  const d = all.find((x) => x.kind === kind && x.metadata.name === name);
  if (!d) throw new Error(`no ${kind} ${name}`);
  return d as T;
};

type Container = {
  name: string;
  ports: Array<{ name: string; containerPort: number }>;
  args?: string[];
  env: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>;
  readinessProbe: { httpGet: { path: string; port: string } };
  livenessProbe: { httpGet: { path: string; port: string } };
  startupProbe: { httpGet: { path: string; port: string } };
  lifecycle: { preStop: { sleep: { seconds: number } } };
};
type DeploymentDoc = Doc & {
  spec: {
    selector: { matchLabels: Record<string, string> };
    template: {
      metadata: { labels: Record<string, string> };
      spec: { terminationGracePeriodSeconds: number; containers: Container[] };
    };
  };
};
const hearth = find<DeploymentDoc>('Deployment', 'hearth');
const podLabels = hearth.spec.template.metadata.labels;
const container = hearth.spec.template.spec.containers[0]!;
const env = new Map(container.env.map((e) => [e.name, e]));
const matches = (selector: Record<string, string>) => Object.entries(selector).every(([k, v]) => podLabels[k] === v);
const exported = (async () =>
  (await createMetrics({ defaultMetrics: false }).registry.getMetricsAsJSON()).map((m) => m.name))();

describe('deploy/kubernetes manifests', () => {
  it('holds every part the fleet needs', () => {
    expect([...new Set(all.map((d) => d.kind))].sort()).toEqual([
      'ConfigMap',
      'Deployment',
      'HTTPRoute',
      'HorizontalPodAutoscaler',
      'InferencePool',
      'PodDisruptionBudget',
      'Role',
      'RoleBinding',
      'Secret',
      'Service',
      'ServiceAccount',
      'ServiceMonitor',
    ]);
  });

  for (const [file, docs] of files) {
    it(`${file}: every document is valid for its kind`, () => {
      expect(docs.length).toBeGreaterThan(0);
      for (const doc of docs) expect(() => validate(doc), `${file}: ${doc.kind} ${doc.metadata?.name}`).not.toThrow();
    });
  }

  it('no built-in document has a field its kind does not define (and a misspelled field is caught)', () => {
    const builtIn = [...files].flatMap(([file, docs]) =>
      docs
        .filter((d) => d.kind !== 'InferencePool')
        .map((doc) => ({ name: `${file}: ${doc.kind} ${doc.metadata.name}`, doc })),
    );
    const misspelled = structuredClone(hearth);
    (misspelled.spec.template.spec.containers[0]! as unknown as Record<string, unknown>).readynessProbe = {
      httpGet: { path: '/health', port: 'http' },
    };
    const found = unknownFields([...builtIn, { name: 'misspelled', doc: misspelled }]);
    expect(found.get('misspelled')?.join(' ')).toMatch(/readynessProbe/);
    found.delete('misspelled');
    expect(Object.fromEntries(found)).toEqual({});
  }, 60_000);

  it('the validators refuse broken documents (a wrong type, a missing required field, an unknown field, a CEL rule)', () => {
    const broken = structuredClone(hearth);
    (broken.spec.template.spec.containers[0]!.ports[0] as { containerPort: unknown }).containerPort = 'http';
    expect(() => validate(broken)).toThrow(/containerPort/);
    const noSelector = structuredClone(find('PodDisruptionBudget', 'hearth')) as Doc & {
      spec: { maxUnavailable: unknown };
    };
    noSelector.spec.maxUnavailable = { one: 1 };
    expect(() => validate(noSelector)).toThrow();
    const pool = find('InferencePool', 'hearth') as Doc & { spec: Record<string, unknown> };
    const noPorts = structuredClone(pool);
    delete noPorts.spec.targetPorts;
    expect(() => validate(noPorts)).toThrow(/targetPorts/);
    const typo = structuredClone(pool);
    typo.spec.targetPortNumber = 8000;
    expect(() => validate(typo)).toThrow(/additional properties/);
    const noPickerPort = structuredClone(pool) as Doc & { spec: { endpointPickerRef: { port?: unknown } } };
    delete noPickerPort.spec.endpointPickerRef.port;
    expect(() => validate(noPickerPort)).toThrow(/port is required/);
    expect(() => validate({ ...pool, kind: 'Unknown' })).toThrow(/no schema/);
  });

  it("the Service, the PodDisruptionBudget, the ServiceMonitor and the InferencePool select the Deployment's pods, on its port", () => {
    expect(matches(hearth.spec.selector.matchLabels)).toBe(true);
    const service = find<
      Doc & { spec: { selector: Record<string, string>; ports: Array<{ name: string; targetPort: string }> } }
    >('Service', 'hearth');
    expect(matches(service.spec.selector)).toBe(true);
    expect(service.spec.ports[0]!.targetPort).toBe(container.ports[0]!.name);
    expect(
      matches(
        find<Doc & { spec: { selector: { matchLabels: Record<string, string> } } }>('PodDisruptionBudget', 'hearth')
          .spec.selector.matchLabels,
      ),
    ).toBe(true);
    const monitor = find<
      Doc & {
        spec: { selector: { matchLabels: Record<string, string> }; endpoints: Array<{ port: string; path: string }> };
      }
    >('ServiceMonitor', 'hearth');
    expect(
      Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => service.metadata.labels?.[k] === v),
    ).toBe(true);
    expect(monitor.spec.endpoints[0]!).toMatchObject({ port: service.spec.ports[0]!.name, path: '/metrics' });
    const pool = find<
      Doc & {
        spec: {
          selector: { matchLabels: Record<string, string> };
          targetPorts: Array<{ number: number }>;
          endpointPickerRef: { name: string; port: { number: number } };
        };
      }
    >('InferencePool', 'hearth');
    expect(matches(pool.spec.selector.matchLabels)).toBe(true);
    expect(pool.spec.targetPorts[0]!.number).toBe(container.ports[0]!.containerPort);
    expect(String(env.get('HEARTH_PORT')?.value)).toBe(String(container.ports[0]!.containerPort));
    // The picker's Service, and the route's backend.
    const epp = find<Doc & { spec: { ports: Array<{ port: number }> } }>('Service', pool.spec.endpointPickerRef.name);
    expect(epp.spec.ports.map((p) => p.port)).toContain(pool.spec.endpointPickerRef.port.number);
    const route = find<Doc & { spec: { rules: Array<{ backendRefs: Array<{ kind: string; name: string }> }> } }>(
      'HTTPRoute',
      'hearth',
    );
    expect(route.spec.rules[0]!.backendRefs[0]).toMatchObject({ kind: 'InferencePool', name: pool.metadata.name });
  });

  it('probes read /health; preStop and the drain fit within the termination grace period', () => {
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe])
      expect(probe.httpGet).toEqual({ path: '/health', port: 'http' });
    const drainSeconds = Number(env.get('HEARTH_SHUTDOWN_GRACE_MS')?.value) / 1000;
    // preStop sleep, Hearth's drain, and the 3 s its managed front gets to hand slow readers what it holds.
    expect(container.lifecycle.preStop.sleep.seconds + drainSeconds + 3).toBeLessThan(
      hearth.spec.template.spec.terminationGracePeriodSeconds,
    );
  });

  it("every HEARTH_ variable is one of Hearth's settings; the database URL and master key come from the example Secret", () => {
    const known = new Set<string>(SERVE_SETTINGS.map((s) => s.env));
    for (const name of env.keys()) expect(known.has(name), name).toBe(true);
    // A Deployment's replicas are interchangeable: none of them runs apps (docs/fleet.md "Apps in a fleet").
    expect(env.get('HEARTH_APP_HOST')?.value).toBe('false');
    const secret = find<Doc & { stringData: Record<string, string> }>('Secret', 'hearth-secrets');
    for (const name of ['HEARTH_DATABASE_URL', 'HEARTH_SECRET_KEY']) {
      const ref = env.get(name)?.valueFrom?.secretKeyRef;
      expect(ref?.name).toBe(secret.metadata.name);
      expect(Object.keys(secret.stringData)).toContain(ref?.key);
    }
  });

  it('the autoscaler, the adapter rule and the endpoint picker name metrics Hearth exports', async () => {
    const names = await exported;
    const hpa = find<
      Doc & {
        spec: {
          scaleTargetRef: { kind: string; name: string };
          metrics: Array<{ type: string; pods: { metric: { name: string } } }>;
        };
      }
    >('HorizontalPodAutoscaler', 'hearth');
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: hearth.metadata.name });
    expect(hpa.spec.metrics[0]!.type).toBe('Pods');
    const hpaMetric = hpa.spec.metrics[0]!.pods.metric.name;
    expect(names).toContain(hpaMetric);
    const adapter = YAML.parse(
      find<Doc & { data: Record<string, string> }>('ConfigMap', 'prometheus-adapter-hearth').data['config.yaml']!,
    ) as {
      rules: Array<{
        seriesQuery: string;
        resources: { overrides: Record<string, { resource: string }> };
        name: { matches: string; as: string };
        metricsQuery: string;
      }>;
    };
    const rule = adapter.rules.find((r) => r.name.as === hpaMetric);
    expect(rule).toBeDefined();
    expect(rule!.seriesQuery.startsWith(`${hpaMetric}{`)).toBe(true);
    expect(new RegExp(rule!.name.matches).test(hpaMetric)).toBe(true);
    expect(rule!.resources.overrides).toEqual({ namespace: { resource: 'namespace' }, pod: { resource: 'pod' } });
    expect(rule!.metricsQuery).toContain('<<.Series>>');
    const eppArgs = find<DeploymentDoc>('Deployment', 'hearth-epp').spec.template.spec.containers[0]!.args ?? [];
    const flag = (name: string) => eppArgs.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
    expect(flag('total-queued-requests-metric')).toBe('hearth_num_requests_waiting');
    expect(flag('kv-cache-usage-percentage-metric')).toBe('hearth_kv_cache_usage_ratio');
    for (const m of ['hearth_num_requests_waiting', 'hearth_num_requests_running', 'hearth_kv_cache_usage_ratio'])
      expect(names).toContain(m);
  });
});
