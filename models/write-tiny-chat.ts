/**
 * Writes the tiny chat model (0.5 MB, no network) for a first run without a model hub, and says how to serve it:
 *   npm run model:tiny [-- FILE]        (default ./tiny-chat.gguf, served as local/tiny-chat)
 * It is the tests' tiny llama with the ChatML template: random weights programmed to answer every chat with
 * "Hello! I am a tiny test model." (3 tokens, streamed, then stop). It proves the install end to end; any
 * real GGUF chat model replaces it with --model.
 */
import { existsSync } from 'node:fs';
import { mkdir, rename } from 'node:fs/promises';
import { dirname, relative, resolve } from 'node:path';
import { CHATML_TEMPLATE } from './chat-templates.ts';
import { resolveTinyLlamaOptions, writeTinyLlama } from './tiny-llama.ts';

const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h') || args.length > 1) {
  console.log('usage: npm run model:tiny [-- FILE]   (writes the tiny chat model, default ./tiny-chat.gguf)');
  process.exit(args.length > 1 ? 2 : 0);
}
// npm runs scripts in the package root; a FILE given is taken from where the user typed the command.
const file = resolve(process.env.INIT_CWD ?? process.cwd(), args[0] ?? resolve(process.cwd(), 'tiny-chat.gguf'));
if (existsSync(file)) {
  console.log(`${file} is already there`);
} else {
  await mkdir(dirname(file), { recursive: true });
  const partial = `${file}.partial-${process.pid}`;
  await writeTinyLlama(partial, resolveTinyLlamaOptions({ chatTemplate: CHATML_TEMPLATE }));
  await rename(partial, file);
  console.log(`wrote ${file}: the tiny test chat model (it answers every chat with "Hello! I am a tiny test model.")`);
}
const shown = relative(process.cwd(), file).startsWith('..') ? file : `./${relative(process.cwd(), file)}`;
console.log(
  `serve it: npm start -- --model ${shown}   (model id local/${file
    .replace(/^.*\//, '')
    .replace(/\.gguf$/i, '')
    .replace(/[^\w.-]+/g, '-')})`,
);
