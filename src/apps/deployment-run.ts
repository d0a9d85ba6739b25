import fs from 'node:fs';
import path from 'node:path';
import type { AppRecord, DeploymentRecord } from '../store/database.ts';
import type { AppHostDeps, AppHostOptions } from './app-host-options.ts';
import type { AppFileLayout } from './app-file-layout.ts';
import type { AppRuntimes } from './app-runtimes.ts';
import { buildApp, DeploymentFailure, fetchRepository, startCommand } from './deployment-builder.ts';
import { handOver } from './sandbox.ts';

/**
 * One deployment's run on the app host (contract.md "Applications on the Yam"), on the main thread inside the app's
 * runtime queue (one deployment of an app at a time): fetch, build, health-gated launch, go-live, and the build log
 * written beside the releases. The host (app-host.ts) owns everything passed in; the app's stop signal (aborted when
 * the app is deleted or Hearth stops) stops its fetch and build, and the host waits for the run before it removes
 * the app's files.
 */
export interface DeploymentHost {
  d: AppHostDeps;
  options: AppHostOptions;
  layout: AppFileLayout;
  runtimes: AppRuntimes;
  /** Aborted when the app goes (deleted, or Hearth stopping). */
  stopSignal: (appId: string) => AbortSignal;
  disposed: () => boolean;
}

/** queued -> fetching -> building -> starting -> live, or failed with a reason; the old live one is retired. */
export async function runDeployment(
  host: DeploymentHost,
  appId: string,
  dep: DeploymentRecord,
  firstLines: string[],
): Promise<void> {
  const { d, options, layout, runtimes } = host;
  const stop = host.stopSignal(appId);
  if (stop.aborted) return; // queued behind a run when the app went
  const log: string[] = [...firstLines];
  const appendLog = (line: string) => {
    log.push(line);
    if (log.length > 2000) log.splice(0, log.length - 2000);
  };
  const state = (s: DeploymentRecord['state'], reason?: string) =>
    d.apps.setDeploymentState(dep.id, s, {
      buildLog: `${log.join('\n')}\n`,
      ...(reason !== undefined ? { reason } : {}),
    });
  const original = d.apps.getById(appId);
  if (!original || host.disposed()) return;
  let app: AppRecord | undefined = original;
  const rt = runtimes.get(appId);
  const codeDir = layout.codeDir(original, dep.codeFrom);
  try {
    if (dep.source.kind !== 'release') {
      await state('fetching');
      if (dep.source.kind === 'repository') {
        const commit = await fetchRepository(
          dep.source.repository,
          options.repositories,
          dep.source.ref,
          codeDir,
          options.buildTimeoutMs,
          appendLog,
          stop,
        );
        await d.apps.setDeploymentState(dep.id, 'fetching', { source: { ...dep.source, commit } });
      }
      await handOver(codeDir, options.sandbox.mode);
      await state('building');
      await buildApp(codeDir, options.sandbox, d.apps.envOf(original).env, options.buildTimeoutMs, appendLog, stop);
    }
    const command = startCommand(codeDir);
    await state('starting');
    app = d.apps.getById(appId);
    if (!app || stop.aborted) return;
    const launched = await rt.launch(runtimes.launchInput(app, dep.id, codeDir, command));
    appendLog(`healthy: GET ${app.healthPath} answered {"ok":true}`);
    const previous = app.liveDeploymentId;
    await d.apps.setLive(appId, dep.id);
    rt.goLive(launched);
    await state('live');
    if (previous && previous !== dep.id) await d.apps.setDeploymentState(previous, 'retired');
    d.metrics.appDeployments.inc({ result: 'live' });
    d.log.info('deployment live', { appId, deploymentId: dep.id });
  } catch (err) {
    const reason =
      err instanceof DeploymentFailure ||
      (err instanceof Error && /^(build_failed|health_check_failed)/.test(err.message))
        ? (err as Error).message
        : `build_failed: ${(err as Error).message}`;
    // What the process said before it failed its checks belongs in the build log too.
    for (const l of rt.logs
      .tail(200)
      .filter((l) => l.deploymentId === dep.id && l.stream !== 'hearth')
      .slice(-20))
      appendLog(`[${l.stream}] ${l.line}`);
    if (stop.aborted) {
      // Not the deployment's failure: the app is being deleted (its records go too) or Hearth is stopping.
      appendLog(host.disposed() ? 'stopped: Hearth is stopping' : 'stopped: the app is being deleted');
      await state('failed', 'cancelled: the app was deleted or Hearth stopped').catch(() => {});
      if (dep.source.kind !== 'release')
        await fs.promises.rm(codeDir, { recursive: true, force: true }).catch(() => {});
      return;
    }
    appendLog(reason);
    await state('failed', reason);
    if (dep.source.kind !== 'release') await fs.promises.rm(codeDir, { recursive: true, force: true }).catch(() => {});
    d.metrics.appDeployments.inc({ result: 'failed' });
    d.log.warn('deployment failed', { appId, deploymentId: dep.id, reason });
  } finally {
    // The whole build log beside the releases (the record keeps its tail); not for an app deleted meanwhile.
    if (d.apps.getById(appId)) {
      const dir = layout.logDir(original);
      await fs.promises
        .mkdir(dir, { recursive: true })
        .then(() => fs.promises.writeFile(path.join(dir, `${dep.id}.log`), `${log.join('\n')}\n`))
        .catch(() => {});
    }
    runtimes.updateGauge();
  }
}
