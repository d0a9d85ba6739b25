/**
 * Jinja chat templates to embed in synthetic models (tokenizer.chat_template), so the
 * chat-template path (llama.cpp / node-llama-cpp reading the template from the GGUF) can be tested.
 */

/** ChatML, as used by Qwen and SmolLM: `<|im_start|>{role}\n{content}<|im_end|>\n` per message. */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
