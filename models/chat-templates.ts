/**
 * Jinja chat templates to embed in synthetic models (tokenizer.chat_template), so the
 * chat-template path (llama.cpp / node-llama-cpp reading the template from the GGUF) can be tested.
 */

/** ChatML, as used by Qwen and SmolLM: `<|im_start|>{role}\n{content}<|im_end|>\n` per message. */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/**
 * ChatML with Qwen3's thinking switch: `<think>\n\n</think>` after the generation prompt when `enable_thinking`
 * is false. A template that marks thinking, for the reasoning split (src/protocol/reasoning-split.ts).
 */
export const THINKING_CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}" +
  "{% if enable_thinking is defined and enable_thinking is false %}{{ '<think>\\n\\n</think>\\n\\n' }}{% endif %}{% endif %}";

/** DeepSeek-R1's way: the generation prompt itself opens the thinking block (the reply starts inside it). */
export const OPEN_THINKING_CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{% endif %}{# closed by the model: </think> #}";
