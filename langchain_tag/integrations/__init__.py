"""Optional LangChain integrations: document loaders and a similarity-search baseline."""
