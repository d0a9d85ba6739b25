/**
 * How a local model writes a function call in its completion (Hermes / Qwen 2.5 style, which the default
 * model's own chat template asks for):
 *
 *   <tool_call>
 *   {"name": "<function name>", "arguments": {<JSON object>}}
 *   </tool_call>
 *
 * repeated for parallel calls. The worker's prompt (the model's Jinja template with tools, or Hearth's
 * fallback instructions) asks for this syntax; the grammar that forces a call (tool_choice `required` or a
 * named function) produces it; the main thread parses it back into `tool_calls`.
 */
export const TOOL_CALL_OPEN = '<tool_call>';
export const TOOL_CALL_CLOSE = '</tool_call>';
