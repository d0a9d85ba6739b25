import { useEffect } from 'preact/hooks';
import { api } from '../api.ts';
import { StateBadge } from '../components/ui.tsx';
import { formatTime } from '../format.ts';
import { useLoad } from '../hooks.ts';
import { ResourceTable } from '../components/resource-table.tsx';
import type { BatchView } from '../types.ts';
import { stoppedBecause } from '../batch-state.ts';

/** States a batch is still worked on in: the page refreshes while one shows. */
const ACTIVE = new Set(['validating', 'in_progress', 'finalizing', 'cancelling']);

/**
 * Batches: the account's Batch API batches (made with an API key at /api/inference/v1/batches), newest first, with
 * their state, request counts and a download of the output file. Refreshes every 2 s while one is active.
 */
export function BatchesPage() {
  const list = useLoad(() => api<{ data: BatchView[] }>('GET', '/api/v1/batches'));
  const active = list.data?.data.some((b) => ACTIVE.has(b.status)) ?? false;
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => void list.reload(), 2_000);
    return () => clearInterval(timer);
  }, [active]);
  return (
    <section aria-labelledby="batches-title">
      <h1 id="batches-title">Batches</h1>
      <p class="muted">
        Batch API jobs of this account: upload a JSONL with <code>POST /api/inference/v1/files</code> and start it with{' '}
        <code>POST /api/inference/v1/batches</code> (an API key, as the OpenAI SDK sends it). Lines run at batch
        priority, after interactive requests.
      </p>
      <ResourceTable
        label="Batches"
        list={list}
        empty="No batches yet."
        columns={[
          { header: 'Batch', cell: (b) => <code>{b.id}</code> },
          { header: 'Endpoint', cell: (b) => <code>{b.endpoint}</code> },
          {
            header: 'State',
            cell: (b) => {
              const why = stoppedBecause(b);
              return (
                <>
                  <StateBadge state={b.status} />
                  {why && <span class="muted"> ({why})</span>}
                </>
              );
            },
          },
          {
            header: 'Requests',
            cell: (b) =>
              `${b.request_counts.completed + b.request_counts.failed} / ${b.request_counts.total}${b.request_counts.failed > 0 ? ` (${b.request_counts.failed} failed)` : ''}`,
            class: 'nowrap',
          },
          { header: 'Created', cell: (b) => formatTime(new Date(b.created_at * 1000).toISOString()), class: 'nowrap' },
          {
            header: 'Output',
            cell: (b) =>
              b.output_file_id ? (
                <a href={`/api/v1/batches/${encodeURIComponent(b.id)}/output`} download={`${b.id}_output.jsonl`}>
                  Download
                </a>
              ) : (
                '—'
              ),
          },
        ]}
      />
    </section>
  );
}
