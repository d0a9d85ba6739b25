import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log/logger.ts';
import type { ModelRegistry } from '../engine/model-registry.ts';
import { parseModelSourceInput } from './model-source-input.ts';

/** The models owners added through the API, kept in the models dir so they are served again after a restart. */
const FILE = 'hearth-models.json';

interface AddedModel {
  id: string;
  source: string;
}

/**
 * The list of models added with `POST /api/v1/models` (docs/models.md), in `<models-dir>/hearth-models.json`:
 * written whole (a temporary file renamed over it) on every add and removal, read at start. Each entry is checked
 * again at start as the API checks a new one (a local file must still lie inside the models dir): one that no
 * longer passes is skipped with a warning, as is one whose id a configured model has taken.
 */
export class AddedModelsFile {
  private readonly file: string;

  constructor(
    private readonly modelsDir: string,
    private readonly log: Logger,
  ) {
    this.file = path.join(modelsDir, FILE);
  }

  /** Adds the saved models to `models` (unloaded; a hub model not pulled yet is pulled on its first load). */
  restore(models: ModelRegistry): void {
    for (const entry of this.read()) {
      try {
        if (models.has(entry.id)) throw new Error(`a configured model has the id '${entry.id}'`);
        models.add(parseModelSourceInput({ source: entry.source, id: entry.id }, this.modelsDir));
      } catch (err) {
        this.log.warn('an added model is not served again', {
          model: entry.id,
          source: entry.source,
          reason: err instanceof Error ? err.message : String(err),
        });
      }
    }
  }

  add(entry: AddedModel): void {
    this.write([...this.read().filter((m) => m.id !== entry.id), entry]);
  }

  remove(id: string): void {
    const all = this.read();
    if (all.some((m) => m.id === id)) this.write(all.filter((m) => m.id !== id));
  }

  private read(): AddedModel[] {
    let text: string;
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch {
      return [];
    }
    try {
      const data = JSON.parse(text) as { models?: unknown };
      if (!Array.isArray(data.models)) throw new Error('no models list');
      return data.models.filter(
        (m): m is AddedModel =>
          typeof m === 'object' &&
          m !== null &&
          typeof (m as AddedModel).id === 'string' &&
          typeof (m as AddedModel).source === 'string',
      );
    } catch (err) {
      this.log.warn('the added models file is unreadable: ignored', {
        file: this.file,
        reason: err instanceof Error ? err.message : String(err),
      });
      return [];
    }
  }

  private write(models: AddedModel[]): void {
    fs.mkdirSync(this.modelsDir, { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, `${JSON.stringify({ models }, null, 2)}\n`, { mode: 0o600 });
    fs.renameSync(tmp, this.file);
  }
}
