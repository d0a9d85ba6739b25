import { useEffect, useState } from 'preact/hooks';
import { ApiFailure, api } from '../api.ts';
import { LineChart } from '../components/line-chart.tsx';
import { ErrorNote, Note, StateBadge } from '../components/ui.tsx';
import { useInterval } from '../hooks.ts';
import { pushSample, type QueueSample, type StatsModel, type StatsView } from '../stats.ts';
import type { HealthView } from '../types.ts';

const POLL_MS = 3000;
const SERIES_BUCKETS = 30; // the route's 10-second buckets over 5 minutes
const QUEUE_SAMPLES = 100; // 5 minutes of polls

/** Model state and warm-up progress, and live charts from GET /api/v1/stats, polled every 3 s. */
export function OverviewPage() {
  const [stats, setStats] = useState<StatsView | null>(null);
  const [queue, setQueue] = useState<QueueSample[]>([]);
  const [model, setModel] = useState<StatsModel | null>(null);
  const [absent, setAbsent] = useState(false);
  const [error, setError] = useState<unknown>(null);

  const poll = async () => {
    try {
      const s = await api<StatsView>('GET', '/api/v1/stats');
      setStats(s);
      setModel(s.model);
      setQueue((q) => pushSample(q, s.requests, QUEUE_SAMPLES));
      setError(null);
    } catch (err) {
      if (!(err instanceof ApiFailure && err.status === 404)) return setError(err);
      // A server without the stats route: the model card from the public /health.
      setAbsent(true);
      try {
        const h = (await (await fetch('/health')).json()) as HealthView;
        setModel({
          id: h.model,
          state: h.state,
          engine: h.engine
            ? `${h.engine.kind} on ${h.engine.backend === 'cpu' ? 'the CPU' : `${h.engine.devices.join(', ') || h.engine.backend} (${h.engine.gpuLayers} layers)`}`
            : null,
          workers: h.workers ?? null,
          pull: h.pull
            ? { downloadedBytes: h.pull.downloaded_bytes, totalBytes: h.pull.total_bytes, percent: h.pull.percent }
            : null,
          error: h.error ?? null,
        });
        setQueue((q) =>
          pushSample(q, { running: h.requests?.running ?? 0, waiting: h.requests?.waiting ?? 0 }, QUEUE_SAMPLES),
        );
      } catch (e) {
        setError(e);
      }
    }
  };
  useEffect(() => {
    void poll();
  }, []);
  useInterval(() => void poll(), POLL_MS);

  const series = stats?.series.slice(-SERIES_BUCKETS) ?? [];
  const w = stats?.window;
  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Overview</h1>
      <ErrorNote error={error} />
      <ModelCard model={model} />
      {w && (
        <dl class="tiles" aria-label={`Last ${w.seconds} seconds`}>
          <Tile label="Requests" value={String(w.requests)} sub={`last ${w.seconds} s`} />
          <Tile label="Errors" value={String(w.errors)} sub={`last ${w.seconds} s`} />
          <Tile label="TTFT p50 / p95" value={`${fmtMs(w.ttftMs.p50)} / ${fmtMs(w.ttftMs.p95)}`} sub="ms" />
          <Tile label="Tokens per second" value={fmtRate(w.tokensPerSecond)} sub={`${w.completionTokens} generated`} />
          <Tile
            label="Running / waiting"
            value={stats ? `${stats.requests.running} / ${stats.requests.waiting}` : '—'}
            sub="now"
          />
        </dl>
      )}
      <h2>Live serving</h2>
      {absent && <Note tone="warn">Live figures are not available on this server (no /api/v1/stats).</Note>}
      <div class="charts">
        <LineChart
          title="Time to first token"
          unit="ms"
          capacity={SERIES_BUCKETS}
          format={fmtAxisMs}
          series={[
            { label: 'p50', tone: 'series-a', values: series.map((b) => b.ttftMs.p50) },
            { label: 'p95', tone: 'series-b', values: series.map((b) => b.ttftMs.p95) },
          ]}
        />
        <LineChart
          title="Tokens per second"
          unit="tokens/s"
          capacity={SERIES_BUCKETS}
          format={fmtRate}
          series={[{ label: 'generated', tone: 'series-a', values: series.map((b) => b.tokensPerSecond) }]}
        />
        <LineChart
          title="Queue"
          unit="requests"
          capacity={QUEUE_SAMPLES}
          format={(v) => String(Math.round(v))}
          series={[
            { label: 'waiting', tone: 'series-b', values: queue.map((q) => q.waiting) },
            { label: 'running', tone: 'series-a', values: queue.map((q) => q.running) },
          ]}
        />
      </div>
      <p class="muted small">
        Shared endpoint, last 5 minutes in 10-second buckets; refreshed every {POLL_MS / 1000} s.
      </p>
    </section>
  );
}

function Tile({ label, value, sub }: { label: string; value: string; sub: string }) {
  return (
    <div class="tile">
      <dt>{label}</dt>
      <dd>
        <span class="tile-value">{value}</span> <span class="muted small">{sub}</span>
      </dd>
    </div>
  );
}

function ModelCard({ model }: { model: StatsModel | null }) {
  if (!model) return <p role="status">Checking the model…</p>;
  const pct = model.pull?.percent;
  const warming = model.state === 'pulling' || model.state === 'loading';
  return (
    <div class="card model-card" aria-label="Model">
      <div class="row spread">
        <div>
          <div class="muted small">Shared model</div>
          <div class="mono strong">{model.id}</div>
        </div>
        <StateBadge state={model.state} />
      </div>
      <dl class="facts">
        <dt>Engine</dt>
        <dd>{model.engine ?? '—'}</dd>
        <dt>Workers ready</dt>
        <dd>{model.workers ? `${model.workers.ready} / ${model.workers.total}` : '—'}</dd>
      </dl>
      {warming && (
        <div class="warmup">
          <div class="muted small">
            {model.state === 'pulling' ? 'Downloading the model' : 'Loading the model into the workers'}
          </div>
          <div
            class="progress"
            role="progressbar"
            aria-label="Warm-up progress"
            aria-valuemin={0}
            aria-valuemax={100}
            aria-valuenow={pct ?? undefined}
          >
            <div class="progress-bar" style={{ width: `${pct ?? 2}%` }} />
          </div>
          <div class="small">
            {pct === undefined
              ? 'starting…'
              : `${pct}%${model.pull?.totalBytes ? ` of ${fmtBytes(model.pull.totalBytes)}` : ''}`}
          </div>
        </div>
      )}
      {model.state === 'failed' && (
        <p class="note error" role="alert">
          {model.error ?? 'The model failed to load.'}{' '}
          {!model.error?.includes('npm start') && (
            <span class="muted">To serve a local GGUF file: npm start -- --model path/to/model.gguf</span>
          )}
        </p>
      )}
    </div>
  );
}

const fmtMs = (v: number | null) => (v === null ? '—' : v < 10 ? v.toFixed(1) : String(Math.round(v)));
const fmtAxisMs = (v: number) =>
  v >= 1000 ? `${(v / 1000).toFixed(1)}s` : v < 10 ? v.toFixed(1) : String(Math.round(v));
const fmtRate = (v: number) => (v >= 100 ? String(Math.round(v)) : v.toFixed(1));
const fmtBytes = (n: number) => (n >= 1e9 ? `${(n / 1e9).toFixed(2)} GB` : `${(n / 1e6).toFixed(0)} MB`);
