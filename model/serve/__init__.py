"""The serving engine and its OpenAI-compatible server (`kimmy serve`).

- `engine`, `async_engine`: continuous batching over the model's cache pools, chunked
  prefill, preemption, shared-prefix reuse; `scheduler`, `runner`, `sampling`, `sequence`,
  `pages`, `slots`, `kv_layout`: its parts.
- `structured`: grammar-constrained structured output and tool calls; `tool_calls`: tool
  calls in a chat template's own `<tool_call>` format (detection, grammar, parser).
- `server`, `protocol`, `chat`, `metrics`: the HTTP API; `factory`: an engine from a model
  source; `vllm_launch`: the same model under vLLM.

Nothing is imported here: each module is imported where it is used, so importing this
package does not import torch.
"""
