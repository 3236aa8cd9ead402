"""Completions from a shared inference server over an OpenAI-compatible completions API
(llama.cpp's server, vLLM), steered segment by segment (issue 25)."""
