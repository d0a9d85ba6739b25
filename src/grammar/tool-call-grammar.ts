import type { FunctionTool } from '../protocol/chat-request.ts';
import { GrammarBuilder, GrammarError, gbnfLiteral } from './gbnf.ts';
import { assertTerminates, SchemaConverter } from './json-schema-grammar.ts';
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from '../protocol/tool-call-syntax.ts';

export interface ToolCallGrammarOptions {
  /** `required`: any declared function; `{ name }`: exactly that one. */
  choice: 'required' | { name: string };
  /** OpenAI `parallel_tool_calls`: one or more calls when true, exactly one when false. */
  parallel: boolean;
}

/**
 * The grammar that forces a completion to be tool calls in Hearth's syntax (tool-call-syntax.ts):
 *
 *   <tool_call>\n{"name": "<declared name>", "arguments": <JSON valid against its parameters>}\n</tool_call>
 *
 * once, or several times separated by "\n" when parallel calls are allowed. Each function's parameters
 * schema is converted with its own `strict` flag. Throws GrammarError (a 400) for a schema it cannot express.
 * Pure; main thread.
 */
export function toolCallGrammar(tools: readonly FunctionTool[], o: ToolCallGrammarOptions): string {
  const chosen = o.choice === 'required' ? tools : tools.filter((t) => t.name === (o.choice as { name: string }).name);
  if (chosen.length === 0)
    throw new GrammarError('tool_choice names a function that is not declared in tools', 'tool_choice');
  const builder = new GrammarBuilder();
  const ofTool = (err: GrammarError, i: number) =>
    new GrammarError(`tools[${tools.indexOf(chosen[i]!)}] (${chosen[i]!.name}): ${err.message}`, err.keyword);
  const converters = chosen.map((tool, i) => new SchemaConverter(builder, tool.parameters, `fn${i}-args`, tool.strict));
  const alternatives = chosen.map((tool, i) => {
    let args: string;
    try {
      args = converters[i]!.convert();
    } catch (err) {
      if (err instanceof GrammarError) throw ofTool(err, i);
      throw err;
    }
    return builder.add(`fn${i}`, `${gbnfLiteral(`${JSON.stringify(tool.name)}, "arguments": `)} ${args}`);
  });
  const call = builder.add(
    'call',
    `${gbnfLiteral(`${TOOL_CALL_OPEN}\n{"name": `)} (${alternatives.join(' | ')}) ${gbnfLiteral(`}\n${TOOL_CALL_CLOSE}`)}`,
  );
  builder.add('root', o.parallel ? `${call} ("\\n" ${call})*` : call);
  assertTerminates(builder, converters, ofTool);
  return builder.text();
}
