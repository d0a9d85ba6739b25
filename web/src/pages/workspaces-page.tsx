import { api } from '../api.ts';
import { ConfirmButton, NameField, StateBadge } from '../components/ui.tsx';
import { formatTime } from '../format.ts';
import { useAction, useChangeAction, useFields, useLoad } from '../hooks.ts';
import { ResourceTable } from '../components/resource-table.tsx';
import { navigate } from '../navigation.ts';
import type { ListOf, WorkspaceView } from '../types.ts';

/** Workspaces: create, list (with the Yam's state), open, delete. */
export function WorkspacesPage() {
  const list = useLoad(() => api<ListOf<WorkspaceView>>('GET', '/api/v1/workspaces'));
  const form = useFields({ name: '' });
  const { name } = form.values;
  const create = useAction();
  const remove = useChangeAction(() => list.reload());
  const submit = (e: Event) => {
    e.preventDefault();
    void create.run(async () => {
      const ws = await api<WorkspaceView>('POST', '/api/v1/workspaces', { body: { name: name.trim() } });
      form.reset();
      navigate(`/workspaces/${encodeURIComponent(ws.workspaceId)}`);
    });
  };
  return (
    <section aria-labelledby="ws-title">
      <h1 id="ws-title">Workspaces</h1>
      <form class="card row" onSubmit={submit} aria-label="Create a workspace">
        <NameField label="Workspace name" placeholder="Client A" bind={form.bind('name')} />
        <button type="submit" class="align-end" disabled={create.busy}>
          Create workspace
        </button>
      </form>
      <ResourceTable
        label="Workspaces"
        list={list}
        actionError={create.error ?? remove.error}
        rowKey={(ws) => ws.workspaceId}
        empty="No workspaces yet."
        columns={[
          { header: 'Name', cell: (ws) => <a href={`/workspaces/${encodeURIComponent(ws.workspaceId)}`}>{ws.name}</a> },
          { header: 'Yam', cell: (ws) => <StateBadge state={ws.yam?.state ?? 'none'} /> },
          { header: 'Created', cell: (ws) => formatTime(ws.createdAt), class: 'nowrap' },
        ]}
        actions={(ws) => (
          <ConfirmButton
            label={`Delete ${ws.name}`}
            confirmLabel={`Confirm deleting ${ws.name} and its projects`}
            onConfirm={() =>
              remove.change(() => api('DELETE', `/api/v1/workspaces/${encodeURIComponent(ws.workspaceId)}`))
            }
          />
        )}
      />
    </section>
  );
}
