import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hearthCli, type HearthProcess, startHearthProcess } from './hearth-process.ts';

/**
 * Issue #28's probe of the prompt cache across accounts, against a real `hearth serve`: a victim account
 * sends a secret system prompt; attackers of other accounts send the same prompt, one that shares its start,
 * and an unrelated one, each reading `usage.prompt_tokens_details.cached_tokens`; then the victim sends its
 * conversation's second turn (its own hit). Each attacker row is made by an account of its own that sent
 * nothing before, so a row reads only what other accounts left (an attacker's own earlier probe would
 * legitimately be its own cache). Used by test/e2e/scheduling/prompt-cache-scope.test.ts and bench/prompt-cache-scope.ts.
 */

export const SECRET =
  'The secret launch code of the company is seven four two nine and the meeting is on Tuesday at the old mill by the river, bring the blue folder.';
export const SECRET_VARIANT = 'The secret launch code of the company is seven four two one';
export const UNRELATED = 'Something entirely different about dogs and cats in the garden today';
const QUESTION = 'What should I remember?';

export interface ProbeRow {
  request: string;
  account: string;
  promptTokens: number;
  cachedTokens: number;
}

export interface ProbeResult {
  victim: ProbeRow;
  sameAsVictim: ProbeRow;
  sharedStart: ProbeRow;
  unrelated: ProbeRow;
  victimSecondTurn: ProbeRow;
}

/** Account names of the probe: the victim's and one per attacker row. */
export const PROBE_ACCOUNTS = ['acct-a', 'acct-b1', 'acct-b2', 'acct-b3'] as const;

/** A data dir with one key per probe account (made before the server starts). */
export function probeDataDir(): { dataDir: string; keys: Record<(typeof PROBE_ACCOUNTS)[number], string> } {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-cache-scope-'));
  const keys = {} as Record<(typeof PROBE_ACCOUNTS)[number], string>;
  for (const account of PROBE_ACCOUNTS) {
    const r = hearthCli([
      'keys',
      'create',
      '--name',
      `probe-${account}`,
      '--account',
      account,
      '--data-dir',
      dataDir,
      '--json',
    ]);
    if (r.status !== 0) throw new Error(`keys create failed: ${r.stderr}`);
    keys[account] = (JSON.parse(r.stdout) as { key: string }).key;
  }
  return { dataDir, keys };
}

/** Starts `hearth serve` on a probe data dir with the model and extra flags, ready to answer. */
export async function startProbeServer(
  model: string,
  args: string[],
): Promise<{ server: HearthProcess; keys: Record<(typeof PROBE_ACCOUNTS)[number], string> }> {
  const { dataDir, keys } = probeDataDir();
  const server = await startHearthProcess({
    dataDir,
    args: ['--model', model, '--threads', '1', ...args],
    env: { HEARTH_LOG_LEVEL: 'info' },
  });
  await server.waitReady(120_000);
  return { server, keys };
}

interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

async function chat(
  server: HearthProcess,
  key: string,
  messages: ChatMessage[],
): Promise<{ promptTokens: number; cachedTokens: number }> {
  const r = await fetch(`${server.baseUrl}/api/inference/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: modelIdOf(server), messages, max_tokens: 4, temperature: 0 }),
  });
  const body = (await r.json()) as {
    usage?: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } };
    error?: unknown;
  };
  if (r.status !== 200 || !body.usage) throw new Error(`chat failed: ${r.status} ${JSON.stringify(body)}`);
  return { promptTokens: body.usage.prompt_tokens, cachedTokens: body.usage.prompt_tokens_details?.cached_tokens ?? 0 };
}

const modelIds = new WeakMap<HearthProcess, string>();
function modelIdOf(server: HearthProcess): string {
  const id = modelIds.get(server);
  if (id === undefined) throw new Error('model id not read yet');
  return id;
}

/** Runs the probe's five requests in order. */
export async function runCacheScopeProbe(
  server: HearthProcess,
  keys: Record<(typeof PROBE_ACCOUNTS)[number], string>,
): Promise<ProbeResult> {
  const models = (await (
    await fetch(`${server.baseUrl}/api/inference/v1/models`, { headers: { authorization: `Bearer ${keys['acct-a']}` } })
  ).json()) as { data: { id: string }[] };
  modelIds.set(server, models.data[0]!.id);
  const row = async (
    request: string,
    account: (typeof PROBE_ACCOUNTS)[number],
    messages: ChatMessage[],
  ): Promise<ProbeRow> => ({ request, account, ...(await chat(server, keys[account], messages)) });
  const turn1: ChatMessage[] = [
    { role: 'system', content: SECRET },
    { role: 'user', content: QUESTION },
  ];
  const victim = await row('system: secret', 'acct-a', turn1);
  const sameAsVictim = await row('the same system prompt', 'acct-b1', turn1);
  const sharedStart = await row('system: "... seven four two one"', 'acct-b2', [
    { role: 'system', content: SECRET_VARIANT },
    { role: 'user', content: QUESTION },
  ]);
  const unrelated = await row('system: unrelated (dogs and cats)', 'acct-b3', [
    { role: 'system', content: UNRELATED },
    { role: 'user', content: QUESTION },
  ]);
  const victimSecondTurn = await row("the victim's second turn", 'acct-a', [
    ...turn1,
    { role: 'assistant', content: 'The code.' },
    { role: 'user', content: 'And the day?' },
  ]);
  return { victim, sameAsVictim, sharedStart, unrelated, victimSecondTurn };
}

/** The probe as a Markdown table. */
export function probeTable(r: ProbeResult): string {
  const rows = [r.victim, r.sameAsVictim, r.sharedStart, r.unrelated, r.victimSecondTurn];
  return [
    '| request (max_tokens 4) | account | cached_tokens |',
    '|---|---|---:|',
    ...rows.map((x) => `| ${x.request} | ${x.account} | ${x.cachedTokens} of ${x.promptTokens} |`),
  ].join('\n');
}
