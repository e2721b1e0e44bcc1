"""Writers of small generated GGUF models that tests and bench/ share: a Gemma-3-like model
(``gemma3``), a LoRA adapter (``lora``), a vision projector (``projector``) and a reranker
(``reranker``). They live here, not in the product: only the build's self-test writes a model
at run time, with ``localllm.model_registry.tiny_gguf``, which the writers here build on."""
