import fs from 'node:fs';
import path from 'node:path';
import { ApiError, invalidRequest } from '../errors/index.ts';
import type { RegisteredModel } from '../engine/model-registry.ts';
import { resolveModelSource } from '../engine/model-source.ts';

/** `<namespace>/<model_name>` (as --model-id). */
const MODEL_ID = /^[\w.-]+\/[\w.:-]+$/;
const HUB_URI = /^hf:[^/\s]+\/[^/\s]+\/[^\s]+\.gguf$/;
const MAX_SOURCE = 1024;
const GGUF_MAGIC = 'GGUF';

/**
 * The body of `POST /api/v1/models` (docs/models.md), validated once: `{source, id?}`. `source` is a hub URI
 * `hf:<user>/<repo>/<file>.gguf` (pulled into the models dir) or a path of a GGUF file inside `modelsDir`
 * (relative to it or absolute). The path is hostile: its real path (symbolic links resolved) must lie inside the
 * models dir's real path, and it must be a regular file that starts as a GGUF does; anything else is a 400 naming
 * `source`. `id` defaults as --model's does.
 */
export function parseModelSourceInput(body: unknown, modelsDir: string): RegisteredModel {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw invalidRequest('The body must be a JSON object {source, id?}', null, 'invalid_body');
  const { source, id, ...rest } = body as Record<string, unknown>;
  const [unknown] = Object.keys(rest);
  if (unknown !== undefined)
    throw invalidRequest(`Unknown field '${unknown}' (source, id)`, unknown, 'unknown_parameter');
  if (typeof source !== 'string' || source.length === 0 || source.length > MAX_SOURCE || source.includes('\0')) {
    throw invalidRequest(
      `'source' must be hf:<user>/<repo>/<file>.gguf or the path of a .gguf file in the models dir (at most ${MAX_SOURCE} characters)`,
      'source',
      'invalid_value',
    );
  }
  if (id !== undefined && (typeof id !== 'string' || !MODEL_ID.test(id)))
    throw invalidRequest("'id' must look like <namespace>/<model_name>", 'id', 'invalid_value');
  if (source.startsWith('hf:')) {
    if (!HUB_URI.test(source))
      throw invalidRequest("'source' must look like hf:<user>/<repo>/<file>.gguf", 'source', 'invalid_value');
    return { source: resolveModelSource(source, id) };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(source))
    throw invalidRequest(
      "'source' takes hf:<user>/<repo>/<file>.gguf or a path in the models dir; other URLs are not pulled",
      'source',
      'invalid_value',
    );
  return { source: resolveModelSource(localFileInside(source, modelsDir), id) };
}

/** The real path of `source` (relative to `modelsDir`), or a 400: outside the models dir, missing, not a file, not a GGUF. */
function localFileInside(source: string, modelsDir: string): string {
  const refused = (why: string) => invalidRequest(`'source' ${why}`, 'source', 'invalid_model_source');
  let dir: string;
  try {
    dir = fs.realpathSync(modelsDir);
  } catch {
    throw refused('cannot be a local path: the models dir does not exist');
  }
  let real: string;
  try {
    real = fs.realpathSync(path.resolve(dir, source));
  } catch {
    throw refused('names no file in the models dir');
  }
  if (!real.startsWith(dir + path.sep)) throw refused('must be a file inside the models dir (--models-dir)');
  let fd: number | undefined;
  try {
    if (!fs.statSync(real).isFile()) throw refused('must be a regular file');
    fd = fs.openSync(real, 'r');
    const head = Buffer.alloc(4);
    fs.readSync(fd, head, 0, 4, 0);
    if (head.toString('latin1') !== GGUF_MAGIC) throw refused('is not a GGUF file');
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw refused('cannot be read');
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
  return real;
}
