import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findPackageDir } from '../../native/paths.ts';

/** llama.cpp's own JSON grammar (grammars/json.gbnf, as node-llama-cpp ships it): any JSON object. */
export function jsonGrammar(): string {
  const dir = findPackageDir('node-llama-cpp');
  if (!dir) throw new Error('node-llama-cpp is not installed');
  return readFileSync(join(dir, 'llama', 'grammars', 'json.gbnf'), 'utf8');
}

/** A grammar that only admits `{"ok": true}` / `{"ok":false}` (optional spaces): complete after a few tokens. */
export const OK_OBJECT_GRAMMAR = 'root ::= "{" ws "\\"ok\\"" ws ":" ws ("true" | "false") ws "}"\nws ::= [ ]?';
