/**
 * JSON Schema coverage: Hearth's converter (src/grammar/json-schema-grammar.ts) against llama.cpp's own
 * (common/json-schema-to-grammar.cpp, what llama-server uses for response_format), on one corpus:
 * bench/json-schema-coverage/corpus.json (every schema of the structured-output and tool-call tests, then one
 * schema per JSON Schema feature clients send; each with a document the schema forbids where one exists).
 *
 *   node --import tsx bench/json-schema-coverage.ts [--samples N] [--json]
 *
 * For each schema and converter, the verdict:
 *   covered     the converter writes a grammar, llama.cpp's grammar parser (the engine's, through
 *               node-llama-cpp) parses it, N documents sampled from it (test/helpers/gbnf-sampler.ts, a
 *               seeded random walk standing in for a model whose every token the grammar constrains; each
 *               one also admitted by llama.cpp's matcher) all validate against the schema (ajv, with formats),
 *               and the forbidden document is refused by llama.cpp's matcher;
 *   refused     the converter throws (Hearth: GrammarError, a 400 naming the keyword);
 *   unparsable  llama.cpp's grammar parser refuses the grammar (a 400 `invalid_grammar` / a failed request);
 *   UNSOUND     the grammar parses but admits JSON the schema forbids (a sample fails validation, or the
 *               forbidden document is admitted): the client gets output that does not validate, silently.
 * "refused" is the honest failure; UNSOUND is the one that matters.
 *
 * llama.cpp's converter runs through bench/json-schema-coverage/llama-schema-driver.cpp, compiled here with
 * g++ against a llama.cpp source tree of the commit node-llama-cpp bundles ($HEARTH_LLAMA_SRC: its `src`
 * folder, e.g. extracted from node-llama-cpp's llama/gitRelease.bundle) and a directory holding its
 * libllama-common.so ($HEARTH_LLAMA_LIB; `native/build-cuda.sh` builds one). Without them the llama.cpp column is skipped.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { getLlama, LlamaGrammar, LlamaLogLevel } from 'node-llama-cpp';
import { GrammarError } from '../src/grammar/gbnf.ts';
import { jsonSchemaToGrammar } from '../src/grammar/json-schema-grammar.ts';
import type { JsonSchema } from '../src/protocol/chat-request.ts';
import { sampleGbnf } from '../test/helpers/gbnf-sampler.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv | Ajv2020) => void;

interface CorpusEntry {
  name: string;
  /** The test file the schema comes from, or 'feature'. */
  source: string;
  schema: Record<string, unknown>;
  /** Hearth converts with OpenAI strict mode (llama.cpp has none; the samples validate against the schema either way). */
  strict?: boolean;
  /** A JSON text the schema forbids. */
  invalid?: string;
}

type Verdict = 'covered' | 'refused' | 'unparsable' | 'UNSOUND' | 'n/a';
interface Result {
  verdict: Verdict;
  detail: string;
}

const ROOT = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const SAMPLES = Number(args[args.indexOf('--samples') + 1] ?? '') || 20;
const corpus = JSON.parse(readFileSync(join(ROOT, 'bench/json-schema-coverage/corpus.json'), 'utf8')) as CorpusEntry[];

const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false });

/** Draft-07 tuple form (`items` an array) for Ajv's draft-07 dialect; 2020-12 otherwise. */
function validator(schema: Record<string, unknown>): (doc: unknown) => boolean {
  const usesDraft7Tuples = JSON.stringify(schema).includes('"items":[');
  const ajv = usesDraft7Tuples ? new Ajv({ strict: false }) : new Ajv2020({ strict: false });
  addFormats(ajv);
  const v = ajv.compile(schema);
  return (doc) => v(doc) as boolean;
}

/** The verdict on one grammar a converter wrote for `entry`. */
function judge(entry: CorpusEntry, grammar: string): Result {
  let matcher: { _testText(t: string): boolean };
  try {
    matcher = new LlamaGrammar(llama, { grammar }) as unknown as { _testText(t: string): boolean };
  } catch (err) {
    return { verdict: 'unparsable', detail: String(err instanceof Error ? err.message : err).slice(0, 80) };
  }
  const valid = validator(entry.schema);
  let bad = 0;
  let example = '';
  for (let seed = 1; seed <= SAMPLES; seed++) {
    let text: string;
    try {
      text = sampleGbnf(grammar, seed);
    } catch (err) {
      return { verdict: 'n/a', detail: `the test walker cannot read this grammar: ${String(err).slice(0, 60)}` };
    }
    if (!matcher._testText(text))
      return { verdict: 'n/a', detail: `walker sample not admitted by llama.cpp: ${text.slice(0, 40)}` };
    let ok: boolean;
    try {
      ok = valid(JSON.parse(text));
    } catch {
      ok = false;
    }
    if (!ok) {
      bad++;
      example ||= text;
    }
  }
  const admitsInvalid = entry.invalid !== undefined && matcher._testText(entry.invalid);
  if (bad > 0 || admitsInvalid) {
    const parts = [];
    if (bad > 0) parts.push(`${bad}/${SAMPLES} samples invalid, e.g. ${JSON.stringify(example.slice(0, 40))}`);
    if (admitsInvalid) parts.push(`admits ${entry.invalid}`);
    return { verdict: 'UNSOUND', detail: parts.join('; ') };
  }
  return {
    verdict: 'covered',
    detail: `${SAMPLES} samples valid${entry.invalid !== undefined ? ', forbidden document refused' : ''}`,
  };
}

function hearth(entry: CorpusEntry): Result {
  let grammar: string;
  try {
    grammar = jsonSchemaToGrammar(entry.schema as JsonSchema, { strict: entry.strict === true });
  } catch (err) {
    if (err instanceof GrammarError)
      return {
        verdict: 'refused',
        detail: `400 ${err.keyword === null ? 'invalid_schema' : `unsupported_schema_keyword '${err.keyword}'`}`,
      };
    throw err;
  }
  return judge(entry, grammar);
}

/** llama.cpp's converter on every schema (one driver process), or null when it cannot be built here. */
function llamaCppGrammars(): Array<{ grammar?: string; error?: string }> | null {
  const src = process.env['HEARTH_LLAMA_SRC'] ?? '(HEARTH_LLAMA_SRC unset)';
  const lib = process.env['HEARTH_LLAMA_LIB'] ?? '(HEARTH_LLAMA_LIB unset)';
  if (!existsSync(join(src, 'common/json-schema-to-grammar.h')) || !existsSync(join(lib, 'libllama-common.so'))) {
    console.error(
      `llama.cpp column skipped: no ${src}/common/json-schema-to-grammar.h or ${lib}/libllama-common.so (set HEARTH_LLAMA_SRC / HEARTH_LLAMA_LIB)`,
    );
    return null;
  }
  const exe = join(mkdtempSync(join(tmpdir(), 'hearth-schema-driver-')), 'driver');
  const cc = spawnSync(
    'g++',
    [
      '-std=c++17',
      '-O1',
      `-I${src}/common`,
      `-I${src}/include`,
      `-I${src}/ggml/include`,
      `-I${src}/vendor`,
      join(ROOT, 'bench/json-schema-coverage/llama-schema-driver.cpp'),
      `-L${lib}`,
      '-lllama-common',
      `-Wl,-rpath,${lib}`,
      '-o',
      exe,
    ],
    { encoding: 'utf8' },
  );
  if (cc.status !== 0) {
    console.error(`llama.cpp column skipped: g++ failed\n${cc.stderr}`);
    return null;
  }
  const run = spawnSync(exe, [], {
    input: corpus.map((e) => JSON.stringify(e.schema)).join('\n') + '\n',
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`the llama.cpp driver failed: ${run.stderr}`);
  return run.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { grammar?: string; error?: string });
}

const llamaOut = llamaCppGrammars();
const rows = corpus.map((entry, i) => {
  const ours = hearth(entry);
  let theirs: Result = { verdict: 'n/a', detail: 'not measured' };
  const out = llamaOut?.[i];
  if (out?.error !== undefined) theirs = { verdict: 'refused', detail: out.error.replace(/\s+/g, ' ').slice(0, 90) };
  else if (out?.grammar !== undefined) theirs = judge(entry, out.grammar);
  return { entry, ours, theirs };
});

if (args.includes('--json')) {
  console.log(
    JSON.stringify(
      rows.map((r) => ({ name: r.entry.name, source: r.entry.source, hearth: r.ours, llamaCpp: r.theirs })),
      null,
      2,
    ),
  );
} else {
  const width = Math.max(...rows.map((r) => r.entry.name.length));
  console.log(`${'schema'.padEnd(width)}  ${'Hearth'.padEnd(10)}  ${'llama.cpp'.padEnd(10)}  notes`);
  for (const r of rows) {
    const notes = [
      r.ours.verdict !== 'covered' ? `Hearth: ${r.ours.detail}` : '',
      r.theirs.verdict !== 'covered' ? `llama.cpp: ${r.theirs.detail}` : '',
    ]
      .filter(Boolean)
      .join(' | ');
    console.log(
      `${r.entry.name.padEnd(width)}  ${r.ours.verdict.padEnd(10)}  ${r.theirs.verdict.padEnd(10)}  ${notes}`,
    );
  }
  const count = (side: 'ours' | 'theirs', v: Verdict, subset = rows) =>
    subset.filter((r) => r[side].verdict === v).length;
  const tests = rows.filter((r) => r.entry.source !== 'feature');
  const features = rows.filter((r) => r.entry.source === 'feature');
  console.log('');
  for (const [label, subset] of [
    ['test schemas', tests],
    ['feature schemas', features],
    ['all', rows],
  ] as const) {
    const line = (side: 'ours' | 'theirs') =>
      (['covered', 'refused', 'unparsable', 'UNSOUND', 'n/a'] as const)
        .map((v) => `${v} ${count(side, v, subset)}`)
        .join(', ');
    console.log(`${label} (${subset.length}):  Hearth: ${line('ours')}  |  llama.cpp: ${line('theirs')}`);
  }
}
