"""The ``langchain-tag`` command line and its demo."""
