import type { ChatHistoryItem, ChatModelFunctionCall, ChatModelFunctions, ChatModelResponse } from 'node-llama-cpp';
import type { ChatMessage, FunctionTool, ToolCall } from '../protocol/chat-request.ts';
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from '../protocol/tool-call-syntax.ts';

/**
 * OpenAI chat messages -> node-llama-cpp chat history, ending with the model turn to generate. Two ways of
 * showing tools and tool traffic, chosen by the prompt builder:
 *
 * - `functionCallHistory` (the chat wrapper speaks Hermes itself, e.g. the model's own Qwen 2.5 Jinja
 *   template): assistant `toolCalls` become function-call items carrying the answering `tool` message as
 *   their result, and the wrapper renders them (and `tools`, see toChatModelFunctions) in the template's
 *   own format, as node-llama-cpp and llama-server do.
 * - `hermesTextHistory` (any other wrapper): Hearth's Hermes instructions (hermesToolInstructions) join the
 *   system message, calls are written into the assistant text in tool-call-syntax.ts's syntax, and tool
 *   results go back in a user turn as `<tool_response>` blocks, as Qwen 2.5's template does.
 *
 * Pure functions of their input; used on a model worker's thread.
 */

/** Declared functions in node-llama-cpp's form (name -> description and JSON schema of the arguments). */
export function toChatModelFunctions(tools: readonly FunctionTool[]): ChatModelFunctions {
  const functions: Record<string, ChatModelFunctions[string]> = {};
  for (const t of tools) {
    functions[t.name] = {
      ...(t.description !== undefined ? { description: t.description } : {}),
      params: t.parameters as ChatModelFunctions[string]['params'],
    };
  }
  return functions;
}

/** A JSON text as a value (objects render as JSON in templates); anything else stays the text itself. */
function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export function functionCallHistory(messages: readonly ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  /** The model item whose calls the following `tool` messages answer (and a later assistant text continues). */
  let openCalls: { item: ChatModelResponse; byId: Map<string, ChatModelFunctionCall> } | null = null;
  for (const m of messages) {
    if (m.role === 'tool') {
      const call = openCalls?.byId.get(m.toolCallId ?? '');
      if (call) call.result = jsonOrText(m.content);
      else history.push({ type: 'user', text: `<tool_response>\n${m.content}\n</tool_response>` });
      continue;
    }
    if (m.role === 'assistant') {
      const calls = (m.toolCalls ?? []).map((c, i): ChatModelFunctionCall => ({
        type: 'functionCall',
        name: c.name,
        params: jsonOrText(c.arguments),
        result: '',
        ...(i === 0 ? { startsNewChunk: true } : {}),
      }));
      const continues = openCalls !== null && history[history.length - 1] === openCalls.item;
      const item: ChatModelResponse = continues && openCalls ? openCalls.item : { type: 'model', response: [] };
      if (m.content.length > 0 || calls.length === 0) item.response.push(m.content);
      item.response.push(...calls);
      if (!continues) history.push(item);
      openCalls =
        calls.length > 0
          ? { item, byId: new Map((m.toolCalls ?? []).map((c, i) => [c.id, calls[i] as ChatModelFunctionCall])) }
          : null;
      continue;
    }
    openCalls = null;
    history.push(m.role === 'system' ? { type: 'system', text: m.content } : { type: 'user', text: m.content });
  }
  // Generation continues the model turn that is waiting for its tool results, or opens a new one.
  const last = history[history.length - 1];
  if (!(openCalls !== null && last === openCalls.item)) history.push({ type: 'model', response: [] });
  return history;
}

/** One call in tool-call-syntax.ts's syntax (arguments as JSON when they parse, else as given). */
export function hermesCallText(call: ToolCall): string {
  const args = jsonOrText(call.arguments);
  return `${TOOL_CALL_OPEN}\n${JSON.stringify({ name: call.name, arguments: args })}\n${TOOL_CALL_CLOSE}`;
}

/** Qwen 2.5's Hermes tool instructions: the functions' JSON schemas and the call syntax. */
export function hermesToolInstructions(tools: readonly FunctionTool[]): string {
  const signatures = tools.map((t) =>
    JSON.stringify({
      type: 'function',
      function: {
        name: t.name,
        ...(t.description !== undefined ? { description: t.description } : {}),
        parameters: t.parameters,
      },
    }),
  );
  return (
    '# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
    `You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n${signatures.join('\n')}\n</tools>\n\n` +
    `For each function call, return a json object with function name and arguments within ${TOOL_CALL_OPEN}${TOOL_CALL_CLOSE} XML tags:\n` +
    `${TOOL_CALL_OPEN}\n{"name": <function-name>, "arguments": <args-json-object>}\n${TOOL_CALL_CLOSE}`
  );
}

export function hermesTextHistory(messages: readonly ChatMessage[], tools: readonly FunctionTool[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  const instructions = tools.length > 0 ? hermesToolInstructions(tools) : null;
  let i = 0;
  if (instructions !== null) {
    const first = messages[0];
    const system = first?.role === 'system' ? `${first.content}\n\n${instructions}` : instructions;
    if (first?.role === 'system') i = 1;
    history.push({ type: 'system', text: system });
  }
  let responses: string[] = [];
  for (; i < messages.length; i++) {
    const m = messages[i] as ChatMessage;
    if (m.role === 'tool') {
      responses.push(`<tool_response>\n${m.content}\n</tool_response>`);
      if (messages[i + 1]?.role !== 'tool') {
        history.push({ type: 'user', text: responses.join('\n') });
        responses = [];
      }
    } else if (m.role === 'assistant') {
      const parts = [m.content, ...(m.toolCalls ?? []).map(hermesCallText)].filter((p) => p.length > 0);
      history.push({ type: 'model', response: [parts.join('\n')] });
    } else {
      history.push(m.role === 'system' ? { type: 'system', text: m.content } : { type: 'user', text: m.content });
    }
  }
  history.push({ type: 'model', response: [] });
  return history;
}
