import { invalidRequest } from '../errors/errors.ts';
import type { ChatMessage } from '../protocol/chat-request.ts';

/**
 * A chat as the vendors that want strictly alternating turns take it (Anthropic Messages, Gemini contents): the
 * system messages apart (joined with a blank line; undefined when there are none), every other message converted by
 * `turn` (`index` = its place in `messages`, for error params), and a turn whose role repeats the previous one's
 * folded into it by `merge`. Throws a 400 (invalid_value on `messages`) naming `provider` when no turn is left. Pure.
 */
export function alternatingTurns<T extends { role: string }>(
  provider: string,
  messages: readonly ChatMessage[],
  turn: (m: ChatMessage, index: number) => T,
  merge: (into: T, add: T) => void,
): { system: string | undefined; turns: T[] } {
  const system: string[] = [];
  const turns: T[] = [];
  messages.forEach((m, i) => {
    if (m.role === 'system') {
      system.push(m.content);
      return;
    }
    const next = turn(m, i);
    const last = turns[turns.length - 1];
    if (last !== undefined && last.role === next.role) merge(last, next);
    else turns.push(next);
  });
  if (turns.length === 0) {
    throw invalidRequest(
      `Provider ${provider} needs at least one user or assistant message; 'messages' has only system messages`,
      'messages',
      'invalid_value',
    );
  }
  return { system: system.length > 0 ? system.join('\n\n') : undefined, turns };
}
