/**
 * A small (~1,700 pieces) SentencePiece-style ("llama" / SPM) vocabulary for the tiny test model, built in code:
 *   0 <unk>, 1 <s>, 2 </s>, then the 256 byte tokens <0x00>..<0xFF> (type BYTE), the ChatML control
 *   tokens <|im_start|> and <|im_end|>, then normal pieces: "▁", printable ASCII characters, common
 *   English words with the '▁' word-start prefix, a few suffixes and a few bare (text-initial) words.
 *
 * llama.cpp's SPM tokenizer starts from characters and repeatedly merges the adjacent pair whose
 * concatenation is a vocabulary piece with the highest score, so every multi-character piece has all
 * its prefixes in the vocabulary too (that is the merge path). Characters with no piece fall back to
 * byte tokens, so any text tokenizes, and detokenizes back to itself.
 */
import { kv, type GgufKv } from './gguf-writer.ts';

/** llama.cpp's `llama_token_type` (the SPM token attributes stored in tokenizer.ggml.token_type). */
export const TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

export const TINY_BOS_ID = 1;
export const TINY_EOS_ID = 2;
export const TINY_UNK_ID = 0;
export const CHATML_START = '<|im_start|>';
export const CHATML_END = '<|im_end|>';

/** SentencePiece's word-start marker (U+2581), which stands for a space. */
export const SPM_SPACE = '\u2581';

const WORDS = `the of and to a in is it you that he was for on are with as I his they be at one have this
from or had by not word but what some we can out other were all there when up use your how said an each she
which do their time if will way about many then them write would like so these her long make thing see him two
has look more day could go come did number sound no most people my over know water than call first who may down
side been now find any new work part take get place made live where after back little only round man year came
show every good me give our under name very through just form sentence great think say help low line differ turn
cause much mean before move right boy old too same tell does set three want air well also play small end put home
read hand port large spell add even land here must big high such follow act why ask men change went light kind off
need house picture try us again animal point mother world near build self earth father head stand own page should
country found answer school grow study still learn plant cover food sun four between state keep eye never last let
thought city tree cross farm hard start might story saw far sea draw left late run while press close night real life
few north open seem together next white children begin got walk example ease paper group always music those both
mark often letter until mile river car feet care second book carry took science eat room friend began idea fish
mountain stop once base hear horse cut sure watch color face wood main enough plain girl usual young ready above
ever red list though feel talk bird soon body dog family direct pose leave song measure door product black short
numeral class wind question happen complete ship area half rock order fire south problem piece told knew pass since
top whole king space heard best hour better true during hundred five remember step early hold west ground interest
reach fast verb sing listen six table travel less morning ten simple several vowel toward war lay against pattern
slow center love person money serve appear road map rain rule govern pull cold notice voice unit power town fine
certain fly fall lead cry dark machine note wait plan figure star box noun field rest correct able pound done beauty
drive stood contain front teach week final gave green quick develop ocean warm free minute strong special mind
behind clear tail produce fact street inch multiply nothing course stay wheel full force blue object decide surface
deep moon island foot system busy test record boat common gold possible plane stead dry wonder laugh thousand ago
ran check game shape equate hot miss brought heat snow tire bring yes distant fill east paint language among hello
assistant user system model token chat reply once upon lily am tiny`;

const CAPITALIZED = `The A I It He She They We You This That What When Where How Why Hello Hi Yes No Once Lily My
There In On If So But And Please Thank Thanks Sure Here`;

const SUFFIXES = ['s', 'es', 'ed', 'ing', 'er', 'ly', 'est', 'ion', 'tion', 'ness', 'ful', "'s", "n't", "'t"];

/** Words without the '▁' marker, as they appear at the very start of a text (e.g. a reply). */
const BARE_WORDS = ['Hello', 'Sure', 'The', 'Yes', 'No'];

function byteToken(byte: number): string {
  return `<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`;
}

/** Adds `piece` and every prefix of it (prefixes keep the "▁" marker when the piece starts with it). */
function addWithPrefixes(piece: string, into: Set<string>): void {
  const chars = [...piece];
  const start = chars[0] === SPM_SPACE ? 2 : 1;
  for (let end = start; end <= chars.length; end++) into.add(chars.slice(0, end).join(''));
}

export interface TinyVocabulary {
  tokens: string[];
  scores: Float32Array;
  tokenTypes: Int32Array;
}

/**
 * Builds the vocabulary; deterministic (fixed word lists, fixed order). `extraPieces` are appended as
 * normal pieces with the lowest scores (used for scripted-reply pieces; see `scriptPieces`).
 */
export function buildTinyVocabulary(extraPieces: readonly string[] = []): TinyVocabulary {
  const tokens: string[] = ['<unk>', '<s>', '</s>'];
  const types: number[] = [TOKEN_TYPE.unknown, TOKEN_TYPE.control, TOKEN_TYPE.control];
  for (let b = 0; b < 256; b++) {
    tokens.push(byteToken(b));
    types.push(TOKEN_TYPE.byte);
  }
  tokens.push(CHATML_START, CHATML_END);
  types.push(TOKEN_TYPE.control, TOKEN_TYPE.control);
  const specialCount = tokens.length;

  // Normal pieces, most preferred first (SentencePiece scores are log-probabilities: higher wins).
  const pieces = new Set<string>([SPM_SPACE]);
  for (let c = 0x21; c < 0x7f; c++) pieces.add(String.fromCharCode(c));
  const words = [...WORDS.split(/\s+/), ...CAPITALIZED.split(/\s+/)].filter((w) => w.length > 0);
  for (const w of words) addWithPrefixes(SPM_SPACE + w, pieces);
  for (const s of [...SUFFIXES, ...BARE_WORDS]) addWithPrefixes(s, pieces);
  for (const piece of extraPieces) {
    if (pieces.has(piece) || tokens.includes(piece))
      throw new Error(`tiny vocabulary already has the piece ${JSON.stringify(piece)}`);
  }
  for (const piece of [...pieces, ...extraPieces]) {
    tokens.push(piece);
    types.push(TOKEN_TYPE.normal);
  }

  const scores = new Float32Array(tokens.length);
  for (let i = specialCount; i < tokens.length; i++) scores[i] = -(i - specialCount);
  return { tokens, scores, tokenTypes: Int32Array.from(types) };
}

/** The tokenizer.* GGUF entries for a tiny vocabulary; `chatTemplate` adds tokenizer.chat_template. */
export function tinyTokenizerMetadata(vocab: TinyVocabulary, chatTemplate: string | null): GgufKv[] {
  const entries: GgufKv[] = [
    kv.string('tokenizer.ggml.model', 'llama'),
    kv.stringArray('tokenizer.ggml.tokens', vocab.tokens),
    kv.f32Array('tokenizer.ggml.scores', vocab.scores),
    kv.i32Array('tokenizer.ggml.token_type', vocab.tokenTypes),
    kv.u32('tokenizer.ggml.bos_token_id', TINY_BOS_ID),
    kv.u32('tokenizer.ggml.eos_token_id', TINY_EOS_ID),
    kv.u32('tokenizer.ggml.unknown_token_id', TINY_UNK_ID),
    kv.bool('tokenizer.ggml.add_bos_token', true),
    kv.bool('tokenizer.ggml.add_eos_token', false),
  ];
  if (chatTemplate !== null) entries.push(kv.string('tokenizer.chat_template', chatTemplate));
  return entries;
}

/**
 * SPM can form a piece from text only by merging two adjacent symbols (single characters, or pieces it
 * formed before) whose concatenation is in the vocabulary. True if `piece` can be formed that way.
 */
export function isFormable(piece: string, vocabulary: ReadonlySet<string>, memo = new Map<string, boolean>()): boolean {
  const chars = [...piece];
  if (chars.length <= 1) return true;
  const known = memo.get(piece);
  if (known !== undefined) return known;
  let formable = false;
  for (let i = 1; i < chars.length && !formable; i++) {
    const left = chars.slice(0, i).join('');
    const right = chars.slice(i).join('');
    const symbol = (s: string) => [...s].length === 1 || (vocabulary.has(s) && isFormable(s, vocabulary, memo));
    formable = symbol(left) && symbol(right);
  }
  memo.set(piece, formable);
  return formable;
}

/**
 * Cuts `text` (ASCII; spaces become '▁') into new pieces that llama.cpp's SPM tokenizer can never
 * produce from input text (each is unformable, see `isFormable`), so they are emitted only by the
 * model: the tokens of a scripted reply. Spells the text with the vocabulary's pieces by greedy
 * longest match, then grows each chunk until it is unformable given the chunks before it.
 * Throws if the text cannot be cut that way (too short, or a chunk repeats).
 */
export function scriptPieces(vocab: TinyVocabulary, text: string): string[] {
  const pieces = new Set(vocab.tokens.filter((_, id) => vocab.tokenTypes[id] === TOKEN_TYPE.normal));
  const longest = Math.max(...[...pieces].map((p) => p.length));
  const source = text.replaceAll(' ', SPM_SPACE);
  const units: string[] = [];
  for (let at = 0; at < source.length;) {
    let length = Math.min(longest, source.length - at);
    while (length > 0 && !pieces.has(source.slice(at, at + length))) length--;
    if (length === 0) throw new Error(`scripted reply: no piece for ${JSON.stringify(source[at])} (use ASCII text)`);
    units.push(source.slice(at, at + length));
    at += length;
  }
  const vocabulary = new Set(vocab.tokens);
  const chunks: string[] = [];
  let current = '';
  for (const unit of units) {
    current += unit;
    if (!vocabulary.has(current) && !isFormable(current, vocabulary)) {
      chunks.push(current);
      vocabulary.add(current);
      current = '';
    }
  }
  if (current !== '') {
    if (chunks.length === 0)
      throw new Error('scripted reply: too short to cut into unformable pieces (use a few words)');
    vocabulary.delete(chunks[chunks.length - 1]!);
    chunks[chunks.length - 1] += current; // longer than an unformable piece's every split: still unformable
    if (isFormable(chunks[chunks.length - 1]!, vocabulary)) throw new Error('scripted reply: cannot cut the ending');
  }
  if (new Set(chunks).size !== chunks.length) throw new Error('scripted reply: a piece repeats; rephrase the reply');
  const final = new Set([...vocab.tokens, ...chunks]);
  if (chunks.some((chunk) => isFormable(chunk, final)))
    throw new Error('scripted reply: cannot cut into unformable pieces');
  return chunks;
}
