import type { TokenLogprob } from '../../src/protocol/chat-delta.ts';

/** A token's log-probability as the engine reports it (`top`: the alternatives, each with its UTF-8 bytes). */
export const tokenLogprob = (token: string, logprob: number, top: Array<[string, number]> = []): TokenLogprob => ({
  token,
  logprob,
  bytes: [...Buffer.from(token)],
  top: top.map(([t, l]) => ({ token: t, logprob: l, bytes: [...Buffer.from(t)] })),
});

/** `lp` as OpenAI's chat and Responses wire shapes write it: the same fields, `top` named `top_logprobs`. */
export const wireLogprob = ({ top, ...token }: TokenLogprob) => ({ ...token, top_logprobs: top });
