import path from 'node:path';

/**
 * Where the app host keeps an app's files: `<rootDir>/<workspaceId>/<appId>/releases/<deploymentId>` (one build
 * directory per deployment that fetched code; env changes and rollbacks reuse an earlier one), the whole build logs
 * in `<rootDir>/<workspaceId>/<appId>/build-logs`. Pure paths.
 */
export class AppFileLayout {
  constructor(private readonly rootDir: string) {}

  workspaceDir(workspaceId: string): string {
    return path.join(this.rootDir, workspaceId);
  }

  appDir(app: { id: string; workspaceId: string }): string {
    return path.join(this.workspaceDir(app.workspaceId), app.id);
  }

  codeDir(app: { id: string; workspaceId: string }, deploymentId: string): string {
    return path.join(this.appDir(app), 'releases', deploymentId);
  }

  logDir(app: { id: string; workspaceId: string }): string {
    return path.join(this.appDir(app), 'build-logs');
  }
}
